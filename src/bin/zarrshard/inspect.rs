//! `inspect`: one shard's index table and dead bytes, as text or as one JSON object
//! (`--json`; schema in docs/cli.md).

use crate::info::location_name;
use crate::one_line;
use serde::Serialize;
use std::io::Write;
use zarrshard::{Array, FsStore, ShardIndex, Store};

/// Everything `inspect` reports; the JSON schema is this struct.
#[derive(Serialize)]
struct Inspect {
    key: String,
    object_bytes: u64,
    /// The object after undoing the codecs that follow sharding (= `object_bytes` without).
    shard_bytes: u64,
    index_bytes: u64,
    index_location: &'static str,
    chunks: Vec<Entry>,
    stored_chunks: u64,
    total_chunks: u64,
    chunk_bytes: u64,
    dead_bytes: u64,
    bad_entries: u64,
}

/// One index entry. `offset`/`nbytes` are absent for an empty entry; a bad one has `error`.
#[derive(Serialize)]
struct Entry {
    coords: Vec<u64>,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nbytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn gather(array: &Array<FsStore>, key: &str) -> zarrshard::Result<Inspect> {
    let m = array.metadata();
    let layout = m
        .shard_layout()
        .ok_or_else(|| zarrshard::Error::InvalidArgument("the array is not sharded".into()))?;
    let object = array
        .store()
        .get(key)?
        .ok_or_else(|| zarrshard::Error::InvalidArgument(format!("no shard object `{key}`")))?;
    let shard = m.codecs.decode_bytes_stage(&object, &m.chunk_repr())?;
    let index = ShardIndex::decode_unchecked(layout.index_bytes(&shard)?, &layout)?;
    let bad: std::collections::HashMap<usize, zarrshard::Error> = index
        .entry_errors(&layout, Some(shard.len() as u64))
        .into_iter()
        .collect();
    // Valid entries only, for the summary.
    let mut valid = index.clone();
    let mut chunks = Vec::with_capacity(index.len());
    for i in 0..index.len() {
        let coords = zarrshard::nd::unravel(i as u64, layout.chunks_per_shard());
        let (offset, nbytes) = index.entry(i);
        let entry = if let Some(e) = bad.get(&i) {
            valid.set(i, None);
            Entry {
                coords,
                state: "bad",
                offset: Some(offset),
                nbytes: Some(nbytes),
                error: Some(one_line(&e.to_string())),
            }
        } else if index.get(i).is_some() {
            Entry {
                coords,
                state: "stored",
                offset: Some(offset),
                nbytes: Some(nbytes),
                error: None,
            }
        } else {
            Entry {
                coords,
                state: "empty",
                offset: None,
                nbytes: None,
                error: None,
            }
        };
        chunks.push(entry);
    }
    Ok(Inspect {
        key: key.to_string(),
        object_bytes: object.len() as u64,
        shard_bytes: shard.len() as u64,
        index_bytes: layout.index_size(),
        index_location: location_name(layout.codec().index_location),
        stored_chunks: chunks.iter().filter(|c| c.state == "stored").count() as u64,
        total_chunks: index.len() as u64,
        chunk_bytes: valid.stored().map(|(_, l)| l.nbytes).sum(),
        dead_bytes: valid.dead_bytes(&layout, shard.len() as u64),
        bad_entries: bad.len() as u64,
        chunks,
    })
}

pub fn run(array: &Array<FsStore>, key: &str, json: bool) -> zarrshard::Result<()> {
    let r = gather(array, key).map_err(|e| e.in_shard(key))?;
    let mut out = std::io::stdout().lock();
    if json {
        crate::write_json(&mut out, &r)?;
        return Ok(());
    }
    write!(
        out,
        "shard {key}: {} bytes, index {} bytes at the {}",
        r.object_bytes, r.index_bytes, r.index_location
    )?;
    if r.shard_bytes != r.object_bytes {
        write!(
            out,
            " (after undoing the codecs that follow sharding: {} bytes)",
            r.shard_bytes
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<20} {:>20} {:>20}  state",
        "chunk", "offset", "nbytes"
    )?;
    for c in &r.chunks {
        let coords = format!("{:?}", c.coords);
        match (c.offset, c.nbytes) {
            (Some(offset), Some(nbytes)) => {
                let state = match &c.error {
                    Some(e) => format!("BAD: {e}"),
                    None => "stored".into(),
                };
                writeln!(out, "{coords:<20} {offset:>20} {nbytes:>20}  {state}")?
            }
            _ => writeln!(out, "{coords:<20} {:>20} {:>20}  empty", "-", "-")?,
        }
    }
    writeln!(
        out,
        "stored chunks: {} of {}, chunk bytes: {}, dead bytes: {}, bad entries: {}",
        r.stored_chunks, r.total_chunks, r.chunk_bytes, r.dead_bytes, r.bad_entries
    )?;
    Ok(())
}
