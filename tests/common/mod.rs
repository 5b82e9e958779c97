//! Test helpers: build arrays on disk from a full in-memory array.
#![allow(dead_code)]

pub mod cli;

use serde_json::Value;
use std::path::Path;
use zarrshard::*;

/// Write `data` (the whole array, C order, native byte order) as the array described by
/// `meta`, encoding each grid chunk with the array's codec chain; chunks that are entirely
/// the fill value are not written.
pub fn write_array(dir: &Path, meta: &Value, data: &[u8]) -> ArrayMetadata {
    let m = ArrayMetadata::from_json(meta).unwrap();
    let array = Array::create(FsStore::new(dir), m.clone()).unwrap();
    let repr = m.chunk_repr();
    let rank = m.shape.len();
    for coords in zarrshard::nd::c_order(&m.grid_shape()) {
        let origin: Vec<u64> = coords
            .iter()
            .zip(&m.chunk_shape)
            .map(|(c, s)| c * s)
            .collect();
        let region: Vec<u64> = origin
            .iter()
            .zip(&m.chunk_shape)
            .zip(&m.shape)
            .map(|((o, c), s)| (*c).min(s - o))
            .collect();
        let mut chunk = repr.filled().unwrap();
        zarrshard::nd::copy_box(
            data,
            &m.shape,
            &origin,
            &mut chunk,
            &m.chunk_shape,
            &vec![0; rank],
            &region,
            m.data_type.size(),
        );
        array.write_shard(&coords, &chunk).unwrap();
    }
    m
}

/// Deterministic pseudo-random bytes.
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Every file below `dir`, at any depth, sorted.
pub fn files_below(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = vec![];
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}
