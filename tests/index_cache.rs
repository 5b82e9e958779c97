//! The per-handle cache of shard indexes (`Array::set_index_cache`): a cold single-chunk read
//! is two store reads (index, chunk), a warm one one; writes through the handle drop the
//! entries they touch; a shard replaced by another handle is read right after
//! `forget_cached_indexes`, and on the same handle through the retry when a checksum catches the
//! stale index; the bound holds however many shards are read; 0 turns it off. Read counts
//! come from `MemoryStore::read_counts` (every `read` and every range of a vectored read).

use serde_json::json;
use zarrshard::*;

/// 64×64 uint16 in 32×32 shards of 8×8 chunks: zstd then crc32c on each chunk, so chunk
/// sizes follow their contents and a stale byte range fails its checksum.
fn meta() -> ArrayMetadata {
    ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [64, 64], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [32, 32]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [8, 8],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                       {"name": "zstd", "configuration": {"level": 1, "checksum": false}},
                       {"name": "crc32c"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}],
    }))
    .unwrap()
}

/// The values of a `rows`×`cols` region at (`r0`, `c0`) of an array whose element (r, c) is
/// `f(r, c)`, as native bytes.
fn values(r0: u64, c0: u64, rows: u64, cols: u64, f: impl Fn(u64, u64) -> u16) -> Vec<u8> {
    (0..rows * cols)
        .flat_map(|i| f(r0 + i / cols, c0 + i % cols).to_ne_bytes())
        .collect()
}

fn first(r: u64, c: u64) -> u16 {
    (r * 64 + c) as u16
}

/// Less compressible than `first`: its chunks are longer, so their offsets move.
fn second(r: u64, c: u64) -> u16 {
    ((r * 64 + c).wrapping_mul(2_654_435_761) >> 7) as u16
}

fn reads(array: &Array<MemoryStore>) -> u64 {
    array.store().read_counts().0
}

/// Read one inner chunk (8×8 at (8, 8), in shard 0/0) and the number of store reads it took.
fn read_chunk(array: &Array<MemoryStore>) -> (Vec<u8>, u64) {
    array.store().reset_counts();
    let got = array.read_region_vec(&[8, 8], &[8, 8]).unwrap();
    (got, reads(array))
}

fn filled(f: impl Fn(u64, u64) -> u16) -> Array<MemoryStore> {
    let array = Array::create(MemoryStore::new(), meta()).unwrap();
    array
        .write_region(&[0, 0], &[64, 64], &values(0, 0, 64, 64, f))
        .unwrap();
    array
}

#[test]
fn a_cold_single_chunk_read_is_two_reads_and_a_warm_one_one() {
    let array = filled(first);
    assert_eq!(array.index_cache_limit(), 8 << 20, "the documented default");
    let want = values(8, 8, 8, 8, first);
    assert_eq!(
        read_chunk(&array),
        (want.clone(), 2),
        "cold: index and chunk"
    );
    assert_eq!(
        read_chunk(&array),
        (want.clone(), 1),
        "warm: the chunk only"
    );
    // Another chunk of the same shard needs no index read either.
    array.store().reset_counts();
    let other = array.read_region_vec(&[24, 0], &[8, 8]).unwrap();
    assert_eq!(other, values(24, 0, 8, 8, first));
    assert_eq!(reads(&array), 1);
    // Another shard is cold.
    array.store().reset_counts();
    let far = array.read_region_vec(&[40, 40], &[8, 8]).unwrap();
    assert_eq!(far, values(40, 40, 8, 8, first));
    assert_eq!(reads(&array), 2);
    // A new handle on the same store starts cold: nothing is shared between handles.
    let again = Array::open(array.store().clone()).unwrap();
    assert_eq!(read_chunk(&again), (want, 2));
}

#[test]
fn a_write_through_the_handle_drops_the_index_it_changes() {
    let array = filled(first);
    assert_eq!(read_chunk(&array).1, 2);
    assert_eq!(read_chunk(&array).1, 1);
    // A partial update appends the chunks it rewrites and a new index: the cached index
    // would still point at the old chunk.
    let new: Vec<u8> = values(8, 8, 4, 4, |r, c| (r * c) as u16 + 7);
    array.write_region(&[8, 8], &[4, 4], &new).unwrap();
    let want = values(8, 8, 8, 8, |r, c| {
        if r < 12 && c < 12 {
            (r * c) as u16 + 7
        } else {
            first(r, c)
        }
    });
    assert_eq!(
        read_chunk(&array),
        (want.clone(), 2),
        "the index read again"
    );
    assert_eq!(read_chunk(&array), (want, 1));
    // A whole shard written (write_shard) and then deleted (all fill).
    let shard = values(0, 0, 32, 32, second);
    array.write_shard(&[0, 0], &shard).unwrap();
    assert_eq!(read_chunk(&array), (values(8, 8, 8, 8, second), 2));
    array.write_shard(&[0, 0], &vec![0u8; 32 * 32 * 2]).unwrap();
    assert_eq!(
        read_chunk(&array),
        (vec![0u8; 128], 1),
        "missing: index read only"
    );
    assert_eq!(read_chunk(&array).1, 1, "absence is not cached");
}

#[test]
fn resize_and_append_through_the_handle_drop_the_indexes() {
    let mut array = filled(first);
    assert_eq!(read_chunk(&array).1, 2);
    // Shrinking cuts shard 0/0 back (elements from 12 on become fill), growing keeps the cut.
    array.resize(&[12, 12]).unwrap();
    array.resize(&[64, 64]).unwrap();
    let want = values(
        8,
        8,
        8,
        8,
        |r, c| if r < 12 && c < 12 { first(r, c) } else { 0 },
    );
    assert_eq!(read_chunk(&array), (want.clone(), 2));
    assert_eq!(read_chunk(&array), (want, 1));
    // Appending rows rewrites the last shard row; the shard read before is read afresh.
    array.store().reset_counts();
    let tail = array.read_region_vec(&[32, 0], &[8, 8]).unwrap();
    assert_eq!(tail, vec![0u8; 128]);
    array.resize(&[40, 64]).unwrap();
    let rows = values(40, 0, 8, 64, second);
    array.append(0, &[8, 64], &rows).unwrap();
    array.flush().unwrap();
    array.store().reset_counts();
    let got = array.read_region_vec(&[40, 0], &[8, 8]).unwrap();
    assert_eq!(got, values(40, 0, 8, 8, second));
    assert_eq!(reads(&array), 2);
}

#[test]
fn a_shard_replaced_by_another_handle_is_read_after_forget_and_by_the_retry() {
    let array = filled(first);
    assert_eq!(read_chunk(&array).1, 2);
    let other = Array::open(array.store().clone()).unwrap();
    other
        .write_region(&[0, 0], &[32, 32], &values(0, 0, 32, 32, second))
        .unwrap();
    let want = values(8, 8, 8, 8, second);
    // The cached index is stale: its range of the new object fails the chunk's checksum (or
    // lies past its end), so the read empties the cache and reads the index again.
    let (got, n) = read_chunk(&array);
    assert_eq!(got, want);
    assert_eq!(n, 3, "the stale chunk, the index, the chunk");
    assert_eq!(read_chunk(&array), (want, 1), "the fresh index is kept");
    // After forget_cached_indexes every index is read again.
    other
        .write_region(&[0, 0], &[32, 32], &values(0, 0, 32, 32, first))
        .unwrap();
    array.forget_cached_indexes();
    assert_eq!(array.cached_index_bytes(), 0);
    assert_eq!(read_chunk(&array), (values(8, 8, 8, 8, first), 2));
    // A shard deleted by the other handle reads as fill through the retry.
    other.write_shard(&[0, 0], &vec![0u8; 32 * 32 * 2]).unwrap();
    assert_eq!(read_chunk(&array).0, vec![0u8; 128]);
}

#[test]
fn the_bound_holds_and_zero_turns_the_cache_off() {
    // 4096 elements in 256 shards of 16 (4 chunks of 4): 256 indexes.
    let meta = ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [4096], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [4], "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}],
    }))
    .unwrap();
    let array = Array::create(MemoryStore::new(), meta).unwrap();
    let data: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8 + 1).collect();
    array.write_region(&[0], &[4096], &data).unwrap();
    let limit = 4096;
    array.set_index_cache(limit);
    let mut most = 0;
    for s in 0..256u64 {
        assert_eq!(
            array.read_region_vec(&[s * 16], &[4]).unwrap(),
            data[s as usize * 16..][..4]
        );
        most = most.max(array.cached_index_bytes());
    }
    assert!(most <= limit, "{most} bytes cached, bound {limit}");
    assert!(most > limit / 2, "{most} bytes: the cache was used");
    // The last shards read are warm, the first ones were evicted.
    array.store().reset_counts();
    array.read_region_vec(&[255 * 16], &[4]).unwrap();
    assert_eq!(reads(&array), 1);
    array.store().reset_counts();
    array.read_region_vec(&[0], &[4]).unwrap();
    assert_eq!(reads(&array), 2);
    // A whole read of every shard keeps within the bound too.
    array.read_region_vec(&[0], &[4096]).unwrap();
    assert!(array.cached_index_bytes() <= limit);
    // Off: emptied, and every read reads the index again.
    array.set_index_cache(0);
    assert_eq!(array.cached_index_bytes(), 0);
    for _ in 0..2 {
        array.store().reset_counts();
        assert_eq!(array.read_region_vec(&[32], &[4]).unwrap(), data[32..36]);
        assert_eq!(reads(&array), 2);
    }
}

/// Eight threads read single chunks of every shard through one handle whose bound holds only
/// two shards' indexes (entries evicted and put back all the time), while another thread
/// empties the cache over and over: every read is right. Also run under ThreadSanitizer
/// (`scripts/tsan.sh`), where the cache's lock and epoch are seen by the race detector.
#[test]
fn threads_reading_through_a_small_cache_while_it_is_emptied_read_right() {
    let array = filled(first);
    let one_index = {
        array.forget_cached_indexes();
        array.read_region_vec(&[0, 0], &[8, 8]).unwrap();
        array.cached_index_bytes()
    };
    array.set_index_cache(2 * one_index + 1);
    let iters: u64 = std::env::var("ZS_THREAD_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..8u64)
            .map(|t| {
                let array = &array;
                s.spawn(move || {
                    for i in 0..iters {
                        let k = (t * 7 + i * 3) % 64;
                        let (r, c) = ((k / 8) * 8, (k % 8) * 8);
                        let got = array.read_region_vec(&[r, c], &[8, 8]).unwrap();
                        assert_eq!(got, values(r, c, 8, 8, first), "chunk at ({r}, {c})");
                        assert!(array.cached_index_bytes() <= 2 * one_index + 1);
                    }
                })
            })
            .collect();
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                array.forget_cached_indexes();
                std::thread::yield_now();
            }
        });
        for r in readers {
            r.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}
