//! `get`: one inner chunk, decoded into the export byte format or as its stored bytes.

use crate::args::uint_list;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use zarrshard::{Array, Error, FsStore, Store};

/// Exit status of `get --raw` when the inner chunk is not stored (it reads as the fill value).
pub const NOT_STORED: u8 = 3;

#[derive(Args)]
pub struct GetArgs {
    array_dir: PathBuf,
    /// Inner chunk coordinates in the array's grid of inner chunks, comma-separated: `3,5` is
    /// elements [3*c0, 4*c0) x [5*c1, 6*c1) for inner chunk shape [c0, c1]. Empty for rank 0.
    #[arg(value_name = "I,J,..")]
    chunk: String,
    /// Write the stored (encoded) bytes of the chunk instead of decoding it; exit 3 when the
    /// chunk is not stored.
    ///
    /// Example: zarrshard get data/image.zarr 3,5 --raw -o chunk.bin
    #[arg(long)]
    raw: bool,
    /// Write to FILE instead of standard output.
    ///
    /// Example: zarrshard get data/image.zarr 3,5 -o chunk.raw
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn run(args: GetArgs) -> zarrshard::Result<ExitCode> {
    let array = crate::open(&args.array_dir)?;
    let m = array.metadata();
    let layout = m
        .shard_layout()
        .ok_or_else(|| Error::InvalidArgument("the array is not sharded".into()))?;
    if !m.codecs.array_to_array.is_empty() {
        return Err(Error::InvalidArgument(
            "get does not support arrays with an array→array codec (transpose) before sharding_indexed".into(),
        ));
    }
    let global = uint_list(&args.chunk).map_err(Error::InvalidArgument)?;
    let inner = &layout.codec().chunk_shape;
    let grid: Vec<u64> = m
        .shape
        .iter()
        .zip(inner)
        .map(|(s, c)| s.div_ceil(*c))
        .collect();
    if global.len() != grid.len() || global.iter().zip(&grid).any(|(g, n)| g >= n) {
        return Err(Error::InvalidArgument(format!(
            "inner chunk {global:?} is outside the array's {grid:?} inner chunks"
        )));
    }
    let per_shard = layout.chunks_per_shard();
    let shard: Vec<u64> = global.iter().zip(per_shard).map(|(g, n)| g / n).collect();
    let local: Vec<u64> = global.iter().zip(per_shard).map(|(g, n)| g % n).collect();
    let key = array.shard_key(&shard);
    let encoded = stored_bytes(&array, &shard, &local).map_err(|e| e.in_shard(&key))?;
    let bytes = match (args.raw, encoded) {
        (true, Some(e)) => e,
        (true, None) => {
            crate::diagnostic(&format!(
                "inner chunk {global:?} is not stored (shard {}); it reads as the fill value",
                array.shard_key(&shard)
            ));
            return Ok(ExitCode::from(NOT_STORED));
        }
        (false, encoded) => {
            // Sized from metadata: held to the memory limit like every decoded buffer.
            let repr = layout.inner_repr();
            let len = zarrshard::runtime::limits::buffer_len(repr.byte_size()?, &repr.describe())?;
            let mut chunk = vec![0u8; len];
            match encoded {
                Some(e) => layout
                    .decode_chunk_into(
                        zarrshard::nd::ravel(&local, per_shard) as usize,
                        &e,
                        &mut chunk,
                    )
                    .map_err(|e| e.in_shard(&key))?,
                None => m.fill_value.fill(&mut chunk),
            }
            zarrshard::array::raw_order(&mut chunk, &m.data_type);
            chunk
        }
    };
    match &args.output {
        Some(path) => std::fs::write(path, &bytes).map_err(|e| Error::io_at(path, e))?,
        None => std::io::stdout().lock().write_all(&bytes)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The stored bytes of inner chunk `local` of shard `shard`: two reads (index, chunk) when the
/// shard can be read partially, else one read of the whole object.
fn stored_bytes(
    array: &Array<FsStore>,
    shard: &[u64],
    local: &[u64],
) -> zarrshard::Result<Option<Vec<u8>>> {
    let m = array.metadata();
    if m.supports_partial_reads() {
        return array.shard_reader(shard)?.read_chunk_raw(local);
    }
    let Some(object) = array.store().get(&array.shard_key(shard))? else {
        return Ok(None);
    };
    let layout = m.shard_layout().expect("sharded");
    let bytes = m.codecs.decode_bytes_stage(&object, &m.chunk_repr())?;
    let index = layout.decode_index(&bytes)?;
    let i = layout.linear_index(local)?;
    Ok(index
        .get(i)
        .map(|loc| bytes[loc.offset as usize..loc.end() as usize].to_vec()))
}
