//! `info`: the array's shape, data type, shard layout, codecs and stored shards, as text or
//! as one JSON object (`--json`; schema in docs/cli.md).

use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use zarrshard::{Array, Format, FsStore, IndexLocation, Store};

/// Everything `info` reports; the JSON schema is this struct.
#[derive(Serialize)]
struct Info {
    format: &'static str,
    shape: Vec<u64>,
    /// The `zarr.json` spelling: a string, or an extension type's object.
    data_type: Value,
    fill_value: Value,
    /// The chunk grid's chunk shape (with sharding: the shard shape, in array order).
    chunk_shape: Vec<u64>,
    grid_shape: Vec<u64>,
    sharding: Option<Sharding>,
    codecs: Value,
    stored_shards: u64,
    total_shards: u64,
    stored_bytes: u64,
}

#[derive(Serialize)]
struct Sharding {
    /// The shard as the sharding codec sees it (after array→array codecs such as transpose).
    shard_shape: Vec<u64>,
    inner_chunk_shape: Vec<u64>,
    chunks_per_shard: Vec<u64>,
    inner_codecs: Value,
    index_codecs: Value,
    index_location: &'static str,
    index_bytes: u64,
    partial_reads: bool,
}

pub fn location_name(l: IndexLocation) -> &'static str {
    match l {
        IndexLocation::Start => "start",
        IndexLocation::End => "end",
    }
}

fn gather(array: &Array<FsStore>) -> zarrshard::Result<Info> {
    let m = array.metadata();
    let sharding = m.shard_layout().map(|layout| {
        let s = layout.codec();
        Sharding {
            shard_shape: layout.shard_repr().shape.clone(),
            inner_chunk_shape: s.chunk_shape.clone(),
            chunks_per_shard: layout.chunks_per_shard().to_vec(),
            inner_codecs: s.codecs.to_json(),
            index_codecs: s.index_codecs.to_json(),
            index_location: location_name(s.index_location),
            index_bytes: layout.index_size(),
            partial_reads: m.supports_partial_reads(),
        }
    });
    let (mut stored_shards, mut stored_bytes) = (0u64, 0u64);
    let total_shards = crate::saturating_product(&m.grid_shape());
    for coords in array.stored_shards()? {
        if let Some(size) = array.store().shard_io(&array.shard_key(&coords))?.size()? {
            stored_shards += 1;
            stored_bytes += size;
        }
    }
    Ok(Info {
        format: match array.format() {
            Format::V3 => "v3",
            Format::V2Prototype => "v2-sharding-prototype",
            Format::V3Draft { .. } => "v3-draft",
        },
        shape: m.shape.clone(),
        data_type: m.data_type.to_json(),
        fill_value: m.fill_value.to_json(&m.data_type),
        chunk_shape: m.chunk_shape.clone(),
        grid_shape: m.grid_shape(),
        sharding,
        codecs: m.codecs.to_json(),
        stored_shards,
        total_shards,
        stored_bytes,
    })
}

pub fn run(array: &Array<FsStore>, json: bool) -> zarrshard::Result<()> {
    let info = gather(array)?;
    let mut out = std::io::stdout().lock();
    if json {
        crate::write_json(&mut out, &info)?;
        return Ok(());
    }
    writeln!(out, "shape: {:?}", info.shape)?;
    writeln!(
        out,
        "data_type: {}",
        info.data_type
            .as_str()
            .map_or_else(|| info.data_type.to_string(), str::to_string)
    )?;
    writeln!(out, "fill_value: {}", info.fill_value)?;
    writeln!(
        out,
        "chunk grid: {:?} ({:?} chunks)",
        info.chunk_shape, info.grid_shape
    )?;
    if let Some(s) = &info.sharding {
        writeln!(out, "shard shape: {:?}", s.shard_shape)?;
        writeln!(out, "inner chunk shape: {:?}", s.inner_chunk_shape)?;
        writeln!(out, "chunks per shard: {:?}", s.chunks_per_shard)?;
        writeln!(out, "inner codecs: {}", s.inner_codecs)?;
        writeln!(out, "index codecs: {}", s.index_codecs)?;
        writeln!(
            out,
            "index: {} bytes at the {}",
            s.index_bytes, s.index_location
        )?;
        writeln!(
            out,
            "partial reads: {}",
            if s.partial_reads {
                "yes"
            } else {
                "no (codec after sharding)"
            }
        )?;
    } else {
        writeln!(out, "sharded: no")?;
    }
    writeln!(out, "codecs: {}", info.codecs)?;
    writeln!(
        out,
        "stored shards: {} of {}, {} bytes",
        info.stored_shards, info.total_shards, info.stored_bytes
    )?;
    Ok(())
}
