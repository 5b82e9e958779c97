//! Region reads and writes against a plain in-memory model of the array (indexing written
//! here element by element, independent of the library's box copies), and the I/O they cost.

use proptest::prelude::*;
use serde_json::{json, Value};
use zarrshard::*;

/// The whole array in C order, one `u16` per element: the model.
struct Model {
    shape: Vec<u64>,
    data: Vec<u16>,
}

impl Model {
    fn offset(&self, at: &[u64]) -> usize {
        at.iter()
            .zip(&self.shape)
            .fold(0u64, |acc, (a, s)| acc * s + a) as usize
    }

    /// Every coordinate of the box, C order.
    fn each(start: &[u64], shape: &[u64]) -> Vec<Vec<u64>> {
        let mut all = vec![start.to_vec()];
        for d in 0..shape.len() {
            all = all
                .into_iter()
                .flat_map(|c| {
                    (0..shape[d]).map(move |k| {
                        let mut c = c.clone();
                        c[d] += k;
                        c
                    })
                })
                .collect();
        }
        if shape.contains(&0) {
            all.clear();
        }
        all
    }

    fn read(&self, start: &[u64], shape: &[u64]) -> Vec<u8> {
        Self::each(start, shape)
            .iter()
            .flat_map(|c| self.data[self.offset(c)].to_ne_bytes())
            .collect()
    }

    fn write(&mut self, start: &[u64], shape: &[u64], bytes: &[u8]) {
        for (k, c) in Self::each(start, shape).iter().enumerate() {
            let o = self.offset(c);
            self.data[o] = u16::from_ne_bytes([bytes[2 * k], bytes[2 * k + 1]]);
        }
    }
}

fn metadata(shape: &[u64], shard: &[u64], inner: &[u64], codec: &str, at_start: bool) -> Value {
    let mut inner_codecs = vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
    match codec {
        "zstd" => inner_codecs
            .push(json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}})),
        "gzip" => inner_codecs.push(json!({"name": "gzip", "configuration": {"level": 1}})),
        _ => {}
    }
    json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 7,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner,
            "codecs": inner_codecs,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": if at_start { "start" } else { "end" }
        }}]
    })
}

fn create(meta: &Value) -> (Array<MemoryStore>, MemoryStore) {
    let store = MemoryStore::new();
    let m = ArrayMetadata::from_json(meta).unwrap();
    (Array::create(store.clone(), m).unwrap(), store)
}

fn values(n: u64, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly small values, some equal to the fill value 7, so some chunks are fill.
            ((x % 9) as u16).to_ne_bytes()
        })
        .collect()
}

#[derive(Debug, Clone)]
struct Case {
    shape: Vec<u64>,
    shard: Vec<u64>,
    inner: Vec<u64>,
    codec: &'static str,
    at_start: bool,
    /// (start, shape) of regions written then read, as fractions of the shape.
    ops: Vec<(Vec<u64>, Vec<u64>, bool)>,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=3)
        .prop_flat_map(|rank| {
            (
                prop::collection::vec((1u64..=3, 1u64..=3, 1u64..=12), rank),
                prop::sample::select(vec!["none", "zstd", "gzip"]),
                any::<bool>(),
                prop::collection::vec(
                    (
                        prop::collection::vec((any::<u64>(), any::<u64>()), rank),
                        any::<bool>(),
                    ),
                    1..6,
                ),
            )
        })
        .prop_map(|(dims, codec, at_start, raw_ops)| {
            let inner: Vec<u64> = dims.iter().map(|d| d.0).collect();
            let shard: Vec<u64> = dims.iter().map(|d| d.0 * d.1).collect();
            let shape: Vec<u64> = dims.iter().map(|d| d.2).collect();
            let ops = raw_ops
                .into_iter()
                .map(|(r, write)| {
                    let (start, extent): (Vec<u64>, Vec<u64>) = r
                        .iter()
                        .zip(&shape)
                        .map(|((a, b), s)| {
                            let start = a % s;
                            (start, b % (s - start + 1))
                        })
                        .unzip();
                    (start, extent, write)
                })
                .collect();
            Case {
                shape,
                shard,
                inner,
                codec,
                at_start,
                ops,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, .. ProptestConfig::default() })]

    /// Any sequence of region writes and reads agrees with the model, and a whole-array read
    /// at the end agrees with both the model and `export` (little-endian on disk).
    #[test]
    fn regions_agree_with_the_model(c in case(), seed in any::<u64>()) {
        let meta = metadata(&c.shape, &c.shard, &c.inner, c.codec, c.at_start);
        let (array, _) = create(&meta);
        let n: u64 = c.shape.iter().product();
        let mut model = Model { shape: c.shape.clone(), data: vec![7; n as usize] };
        for (k, (start, extent, write)) in c.ops.iter().enumerate() {
            if *write {
                let data = values(extent.iter().product(), seed ^ k as u64);
                array.write_region(start, extent, &data).unwrap();
                model.write(start, extent, &data);
            }
            let got = array.read_region_vec(start, extent).unwrap();
            prop_assert_eq!(got, model.read(start, extent));
        }
        let zeros = vec![0; c.shape.len()];
        let all = array.read_region_vec(&zeros, &c.shape).unwrap();
        prop_assert_eq!(&all, &model.read(&zeros, &c.shape));
        let mut exported = Vec::new();
        array.export(&mut exported).unwrap();
        let le: Vec<u8> = model.data.iter().flat_map(|v| v.to_le_bytes()).collect();
        prop_assert_eq!(exported, le);
    }
}

#[test]
fn a_region_costs_one_index_read_and_one_coalesced_run_per_shard() {
    // 16×16 array, one 16×16 shard of 4×4 inner chunks, uncompressed (32 bytes per chunk).
    let meta = metadata(&[16, 16], &[16, 16], &[4, 4], "none", false);
    let (array, store) = create(&meta);
    let data = values(256, 3);
    array.write_region(&[0, 0], &[16, 16], &data).unwrap();
    store.reset_counts();
    // Rows 4..8, cols 2..10: inner chunks (1,0), (1,1), (1,2), adjacent in the object
    // (C order): 1 index read + 1 run of 3 × 32 bytes.
    let got = array.read_region_vec(&[4, 2], &[4, 8]).unwrap();
    let model = Model {
        shape: vec![16, 16],
        data: data
            .chunks(2)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
            .collect(),
    };
    assert_eq!(got, model.read(&[4, 2], &[4, 8]));
    let index_bytes = 16 * 16 + 4;
    assert_eq!(store.read_counts(), (2, index_bytes + 3 * 32));
    // Rows 4..12, cols 0..4: inner chunks (1,0) and (2,0), chunks 4 and 8 of the object, 96
    // bytes apart: the default gap (64 KiB) reads chunks 4..=8 as one run; with the array's
    // gap at 0 they are two runs of 32 bytes. The shard's index is in the handle's cache
    // (`Array::set_index_cache`) since the first read: these read the runs only.
    let want = model.read(&[4, 0], &[8, 4]);
    store.reset_counts();
    assert_eq!(array.read_region_vec(&[4, 0], &[8, 4]).unwrap(), want);
    assert_eq!(store.read_counts(), (1, 5 * 32));
    assert_eq!(array.coalesce_gap(), 64 << 10);
    array.set_coalesce_gap(0);
    store.reset_counts();
    assert_eq!(array.read_region_vec(&[4, 0], &[8, 4]).unwrap(), want);
    assert_eq!(store.read_counts(), (2, 2 * 32));
    // Without the cache each read reads the index again.
    array.set_index_cache(0);
    store.reset_counts();
    assert_eq!(array.read_region_vec(&[4, 0], &[8, 4]).unwrap(), want);
    assert_eq!(store.read_counts(), (3, index_bytes + 2 * 32));
    // A region outside every stored shard: one (missing) index read, all fill.
    let (empty, store) = create(&metadata(&[16, 16], &[8, 8], &[4, 4], "zstd", true));
    store.reset_counts();
    assert_eq!(
        empty.read_region_vec(&[1, 1], &[3, 3]).unwrap(),
        7u16.to_ne_bytes().repeat(9)
    );
    assert_eq!(store.read_counts(), (1, 0));
}

#[test]
fn region_writes_read_only_partly_covered_chunks() {
    let meta = metadata(&[16, 16], &[16, 16], &[4, 4], "zstd", false);
    let (array, store) = create(&meta);
    array
        .write_region(&[0, 0], &[16, 16], &values(256, 5))
        .unwrap();
    // A whole shard: nothing is read.
    store.reset_counts();
    array
        .write_region(&[0, 0], &[16, 16], &values(256, 6))
        .unwrap();
    assert_eq!(store.read_counts().0, 0);
    // Exactly inner chunk (1, 1): the index only.
    store.reset_counts();
    array
        .write_region(&[4, 4], &[4, 4], &values(16, 7))
        .unwrap();
    assert_eq!(store.read_counts().0, 1);
    // One element of inner chunk (2, 3): the index and that chunk.
    store.reset_counts();
    array.write_region(&[9, 13], &[1, 1], &[9, 0]).unwrap();
    assert_eq!(store.read_counts().0, 2);
    let one = array.read_region_vec(&[9, 13], &[1, 1]).unwrap();
    assert_eq!(one, [9, 0]);
}

#[test]
fn region_errors_are_exact() {
    let (array, _) = create(&metadata(&[10, 10], &[4, 4], &[2, 2], "none", false));
    let mut out = vec![0u8; 8];
    assert!(matches!(
        array.read_region(&[0], &[2], &mut out),
        Err(Error::InvalidArgument(m)) if m.contains("rank 1")
    ));
    assert!(matches!(
        array.read_region(&[9, 0], &[2, 2], &mut out),
        Err(Error::InvalidArgument(m)) if m.contains("reaches past")
    ));
    assert!(matches!(
        array.read_region(&[u64::MAX, 0], &[2, 2], &mut out),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        array.read_region(&[0, 0], &[2, 3], &mut out),
        Err(Error::BufferSize { .. })
    ));
    assert!(matches!(
        array.write_region(&[0, 0], &[3, 2], &out),
        Err(Error::BufferSize { .. })
    ));
    // An empty region needs no buffer and touches nothing.
    array.read_region(&[10, 3], &[0, 2], &mut []).unwrap();
}

#[test]
fn transposed_and_bytes_to_bytes_arrays_go_whole_shard() {
    // transpose before sharding, and gzip after it: both fall back to whole shards.
    let mut t = metadata(&[9, 7], &[4, 4], &[2, 2], "none", false);
    t["codecs"].as_array_mut().unwrap().insert(
        0,
        json!({"name": "transpose", "configuration": {"order": [1, 0]}}),
    );
    let mut g = metadata(&[9, 7], &[4, 4], &[2, 2], "none", true);
    g["codecs"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "gzip", "configuration": {"level": 1}}));
    for meta in [t, g] {
        let (array, _) = create(&meta);
        let mut model = Model {
            shape: vec![9, 7],
            data: vec![7; 63],
        };
        for (k, (start, shape)) in [([1, 1], [5, 5]), ([0, 0], [9, 7]), ([8, 6], [1, 1])]
            .iter()
            .enumerate()
        {
            let data = values(shape.iter().product(), k as u64 + 11);
            array.write_region(start, shape, &data).unwrap();
            model.write(start, shape, &data);
            assert_eq!(
                array.read_region_vec(&[0, 0], &[9, 7]).unwrap(),
                model.read(&[0, 0], &[9, 7])
            );
        }
    }
}

/// Region writes of several shapes into a directory that `tests/interop/check_region.py`
/// then reads with zarr-python and tensorstore (run by scripts/test.sh after this test), equal
/// to `expected.raw` written here from the model (little-endian).
#[test]
fn region_writes_for_the_peers_to_read() {
    let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("region-interop");
    let _ = std::fs::remove_dir_all(&root);
    for (name, at_start, codec) in [("zstd-end", false, "zstd"), ("raw-start", true, "none")] {
        let dir = root.join(format!("{name}.zarr"));
        std::fs::create_dir_all(&dir).unwrap();
        let meta = metadata(&[37, 29], &[16, 8], &[4, 4], codec, at_start);
        let array =
            Array::create(FsStore::new(&dir), ArrayMetadata::from_json(&meta).unwrap()).unwrap();
        let mut model = Model {
            shape: vec![37, 29],
            data: vec![7; 37 * 29],
        };
        let boxes: [([u64; 2], [u64; 2]); 5] = [
            ([0, 0], [37, 29]),
            ([3, 5], [20, 11]),
            ([16, 8], [16, 8]),
            ([36, 28], [1, 1]),
            ([10, 0], [2, 29]),
        ];
        for (k, (start, shape)) in boxes.iter().enumerate() {
            let data = values(shape.iter().product(), k as u64 + 21);
            array.write_region(start, shape, &data).unwrap();
            model.write(start, shape, &data);
        }
        let le: Vec<u8> = model.data.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(root.join(format!("{name}.raw")), le).unwrap();
    }
}

/// A reader that hands out `step` bytes per call and fails with `EIO` once `fail_at` bytes
/// have been read.
struct Trickle<'a> {
    data: &'a [u8],
    at: usize,
    step: usize,
    fail_at: Option<usize>,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.fail_at.is_some_and(|f| self.at >= f) {
            return Err(std::io::Error::from_raw_os_error(5));
        }
        let n = buf.len().min(self.step).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// `import` reads the next row of shards on the calling thread while the pool encodes the
/// current one: with the pool or without, and whatever sizes the reader's reads come in, the
/// array then holds the input; a reader failing half-way surfaces as its own error; a short
/// or long input is the exact error.
#[test]
fn import_reads_rows_while_encoding_and_reports_reader_errors() {
    // 5 rows × 2 columns of 8×8 shards, the last row and column cut by the array's edge.
    let meta = metadata(&[37, 13], &[8, 8], &[4, 4], "zstd", false);
    let data = values(37 * 13, 11);
    let raw: Vec<u8> = data
        .chunks(2)
        .flat_map(|b| u16::from_ne_bytes([b[0], b[1]]).to_le_bytes())
        .collect();
    let import = |array: &Array<MemoryStore>, input: &mut dyn std::io::Read| {
        array.import(input, WriteStrategy::Buffered, WriteOptions::default())
    };
    for threads in [1, 0] {
        zarrshard::set_threads(threads).unwrap();
        let (array, _) = create(&meta);
        let mut input = Trickle {
            data: &raw,
            at: 0,
            step: 7,
            fail_at: None,
        };
        import(&array, &mut input).unwrap();
        assert_eq!(array.read_region_vec(&[0, 0], &[37, 13]).unwrap(), data);

        let (array, _) = create(&meta);
        let mut failing = Trickle {
            data: &raw,
            at: 0,
            step: 7,
            fail_at: Some(raw.len() / 2),
        };
        match import(&array, &mut failing).unwrap_err() {
            Error::Io { code, .. } => assert_eq!(code, 5, "the reader's EIO"),
            other => panic!("expected the reader's I/O error, got {other}"),
        }
        for (input, word) in [
            (&raw[..raw.len() - 1], "shorter"),
            (&[raw.as_slice(), &[0]].concat()[..], "longer"),
        ] {
            let (array, _) = create(&meta);
            assert_eq!(
                import(&array, &mut &input[..]).unwrap_err().to_string(),
                format!("invalid argument: the input is {word} than the array's 962 bytes")
            );
        }
    }
    zarrshard::set_threads(0).unwrap();
}

/// On one thread a region read fetches each pass of shards into the buffers of the pass before
/// (files read into them): rows whose objects are larger, smaller or missing in turn must all
/// read back as written, for the whole array and for a region cutting every row. Each row of
/// shards here covers 2.15 MB, so two exceed a pass's 4 MiB and every row is a pass of its own;
/// a small region across the same rows is read in one pass.
#[test]
fn one_thread_region_reads_reuse_buffers_across_rows_of_shards() {
    const R: u64 = 512; // rows per shard
    const W: u64 = 2100; // the array's width: one shard per row of shards
    let dir = tempfile::tempdir().unwrap();
    let meta = metadata(&[5 * R, W], &[R, W], &[128, 525], "zstd", false);
    let array = Array::create(
        FsStore::new(dir.path()),
        ArrayMetadata::from_json(&meta).unwrap(),
    )
    .unwrap();
    let mut expected = vec![7u16; (5 * R * W) as usize];
    // Rows of shards: noise, constant (small objects), noise, nothing stored, noise.
    for (row, seed) in [(0u64, Some(1)), (1, None), (2, Some(2)), (4, Some(3))] {
        let data = match seed {
            Some(s) => values(R * W, s),
            None => vec![3u16; (R * W) as usize]
                .iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect(),
        };
        array.write_region(&[row * R, 0], &[R, W], &data).unwrap();
        for (k, v) in data.chunks(2).enumerate() {
            expected[(row * R * W) as usize + k] = u16::from_ne_bytes([v[0], v[1]]);
        }
    }
    let region = |start: [u64; 2], shape: [u64; 2]| -> Vec<u8> {
        (start[0]..start[0] + shape[0])
            .flat_map(|r| {
                let from = (r * W + start[1]) as usize;
                expected[from..from + shape[1] as usize].to_vec()
            })
            .flat_map(|v| v.to_ne_bytes())
            .collect()
    };
    zarrshard::set_threads(1).unwrap();
    let whole = ([0, 0], [5 * R, W]);
    let cutting = ([3, 5], [5 * R - 6, W - 9]);
    let small = ([R - 3, 100], [3 * R + 6, 40]);
    for (start, shape) in [whole, cutting, small, whole] {
        assert!(
            array.read_region_vec(&start, &shape).unwrap() == region(start, shape),
            "region at {start:?} of {shape:?}"
        );
    }
    zarrshard::set_threads(0).unwrap();
}

/// An 8x8 uint16 array in one shard of 2x2 inner chunks, each chunk with its own crc32c (so a
/// flipped bit is found), index at the end, with or without crc32c.
fn crc_8x8(index_crc: bool) -> ArrayMetadata {
    let mut index_codecs = vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
    if index_crc {
        index_codecs.push(json!({"name": "crc32c"}));
    }
    ArrayMetadata::from_json(&json!({"zarr_format": 3, "node_type": "array",
        "shape": [8, 8], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 8]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_codecs": index_codecs, "index_location": "end"}}]}))
    .unwrap()
}

/// Element `i` (C order) of the 8x8 array is `100 + i`.
fn v8x8() -> Vec<u8> {
    (0..64u16).flat_map(|i| (100 + i).to_ne_bytes()).collect()
}

/// The model's region of `v8x8`, computed element by element.
fn v8x8_region(start: [u64; 2], shape: [u64; 2]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in start[0]..start[0] + shape[0] {
        for c in start[1]..start[1] + shape[1] {
            out.extend_from_slice(&(100 + (r * 8 + c) as u16).to_ne_bytes());
        }
    }
    out
}

/// W1 (a): a region write that must merge with a corrupt chunk fails before appending
/// anything: the object is byte-identical and every intact chunk reads as before. (It used to
/// append the chunks before the corrupt one and stop without a new index: the object no longer
/// ended with an index and the whole shard was unreadable.)
#[test]
fn failed_region_write_over_a_corrupt_chunk_leaves_the_shard_as_it_was() {
    let store = MemoryStore::new();
    let array = Array::create(store.clone(), crc_8x8(true)).unwrap();
    array.write_region(&[0, 0], &[8, 8], &v8x8()).unwrap();
    // Flip a bit of inner chunk [3, 3] (elements [6..8, 6..8]).
    let loc = array
        .shard_reader(&[0, 0])
        .unwrap()
        .chunk_location(&[3, 3])
        .unwrap()
        .unwrap();
    let mut obj = store.get("c/0/0").unwrap().unwrap();
    obj[loc.offset as usize] ^= 1;
    store.set("c/0/0", &obj).unwrap();
    // Rows/cols 1..7: partly covers chunk [0, 0] ... and the corrupt chunk [3, 3].
    let e = array
        .write_region(&[1, 1], &[6, 6], &[0x55; 6 * 6 * 2])
        .unwrap_err();
    assert!(matches!(e, Error::ChecksumMismatch { .. }), "{e}");
    assert_eq!(store.get("c/0/0").unwrap().unwrap(), obj);
    assert_eq!(
        array.read_region_vec(&[0, 0], &[6, 8]).unwrap(),
        v8x8_region([0, 0], [6, 8])
    );
    assert_eq!(
        array.read_region_vec(&[6, 0], &[2, 6]).unwrap(),
        v8x8_region([6, 0], [2, 6])
    );
}

/// A store whose reads fail once `reads_left` reads have been made, and whose writes fail
/// once `writes_left` writes have been made.
#[derive(Clone)]
struct Flaky {
    inner: MemoryStore,
    reads_left: std::sync::Arc<std::sync::atomic::AtomicI64>,
    writes_left: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

struct FlakyIo {
    inner: Box<dyn ShardIo>,
    reads_left: std::sync::Arc<std::sync::atomic::AtomicI64>,
    writes_left: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

fn tick(left: &std::sync::atomic::AtomicI64, what: &str) -> Result<()> {
    if left.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) <= 0 {
        return Err(Error::Io {
            code: 5,
            message: format!("injected {what} error"),
        });
    }
    Ok(())
}

impl ShardIo for FlakyIo {
    fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>> {
        tick(&self.reads_left, "read")?;
        self.inner.read(range)
    }
    fn size(&self) -> Result<Option<u64>> {
        self.inner.size()
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        if let Err(e) = tick(&self.writes_left, "write") {
            // A failing write writes half its bytes first, as a torn write would.
            self.inner.write_at(offset, &data[..data.len() / 2])?;
            return Err(e);
        }
        self.inner.write_at(offset, data)
    }
    fn put(&self, data: &[u8]) -> Result<()> {
        self.inner.put(data)
    }
    fn truncate(&self, len: u64) -> Result<()> {
        self.inner.truncate(len)
    }
    fn delete(&self) -> Result<()> {
        self.inner.delete()
    }
}

impl Store for Flaky {
    fn shard_io(&self, key: &str) -> Result<Box<dyn ShardIo>> {
        Ok(Box::new(FlakyIo {
            inner: self.inner.shard_io(key)?,
            reads_left: self.reads_left.clone(),
            writes_left: self.writes_left.clone(),
        }))
    }
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.inner.set(key, value)
    }
}

fn flaky() -> (Array<Flaky>, Flaky) {
    let store = Flaky {
        inner: MemoryStore::new(),
        reads_left: std::sync::Arc::new(i64::MAX.into()),
        writes_left: std::sync::Arc::new(i64::MAX.into()),
    };
    let array = Array::create(store.clone(), crc_8x8(false)).unwrap();
    array.write_region(&[0, 0], &[8, 8], &v8x8()).unwrap();
    (array, store)
}

/// W1 (b): the store's third read fails (1: the index, 2: chunk [0, 0], 3: chunk [0, 1], both
/// partly covered): nothing was appended, the object is byte-identical, every chunk reads as
/// before (the index has no crc32c, so `repair` could not have helped).
#[test]
fn a_read_error_during_a_region_write_leaves_the_shard_as_it_was() {
    let (array, store) = flaky();
    let before = store.inner.get("c/0/0").unwrap().unwrap();
    store
        .reads_left
        .store(2, std::sync::atomic::Ordering::SeqCst);
    let e = array
        .write_region(&[1, 1], &[3, 3], &[0x55; 3 * 3 * 2])
        .unwrap_err();
    assert!(matches!(e, Error::Io { code: 5, .. }), "{e}");
    store
        .reads_left
        .store(i64::MAX, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(store.inner.get("c/0/0").unwrap().unwrap(), before);
    assert_eq!(array.read_region_vec(&[0, 0], &[8, 8]).unwrap(), v8x8());
}

/// W1: a write of the store that fails part way through the appends (the 2nd chunk, then
/// the index) is rolled back by truncation: the object is byte-identical.
#[test]
fn a_write_error_during_a_region_write_is_rolled_back() {
    for writes_before_failure in [0, 1, 4] {
        let (array, store) = flaky();
        let before = store.inner.get("c/0/0").unwrap().unwrap();
        // Rows/cols 1..4 touch 4 chunks: 4 chunk writes, then the index.
        store
            .writes_left
            .store(writes_before_failure, std::sync::atomic::Ordering::SeqCst);
        let e = array
            .write_region(&[1, 1], &[3, 3], &[0x55; 3 * 3 * 2])
            .unwrap_err();
        assert!(matches!(e, Error::Io { code: 5, .. }), "{e}");
        store
            .writes_left
            .store(i64::MAX, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            store.inner.get("c/0/0").unwrap().unwrap(),
            before,
            "{writes_before_failure}"
        );
        assert_eq!(array.read_region_vec(&[0, 0], &[8, 8]).unwrap(), v8x8());
    }
}

/// W4: the last shard of an array of 2^64-1 elements ends past u64::MAX; a region there
/// reads and writes (it used to overflow computing the shard's end).
#[test]
fn regions_in_the_last_shard_of_a_2_pow_64_array() {
    let meta = ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [u64::MAX], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
            "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]
    }))
    .unwrap();
    let array = Array::create(MemoryStore::new(), meta).unwrap();
    let mut out = [9u8; 1];
    array.read_region(&[u64::MAX - 1], &[1], &mut out).unwrap();
    assert_eq!(out, [0]);
    array.write_region(&[u64::MAX - 1], &[1], &[5]).unwrap();
    assert_eq!(array.read_region_vec(&[u64::MAX - 1], &[1]).unwrap(), [5]);
    // Across the last two shards, partly covering both.
    array
        .write_region(&[u64::MAX - 4], &[3], &[1, 2, 3])
        .unwrap();
    assert_eq!(
        array.read_region_vec(&[u64::MAX - 5], &[5]).unwrap(),
        [0, 1, 2, 3, 5]
    );
}

/// F5: a region whose byte size overflows 64 bits is an invalid argument (it was reported as
/// invalid metadata).
#[test]
fn a_region_whose_size_overflows_is_an_invalid_argument() {
    let big = 1u64 << 33;
    let (array, _) = create(&metadata(
        &[big, big],
        &[1 << 20, 1 << 20],
        &[1024, 1024],
        "none",
        false,
    ));
    assert!(matches!(
        array.read_region(&[0, 0], &[big, big], &mut []),
        Err(Error::InvalidArgument(m)) if m.contains("overflows")
    ));
    assert!(matches!(
        array.write_region(&[0, 0], &[big, big], &[]),
        Err(Error::InvalidArgument(m)) if m.contains("overflows")
    ));
    assert!(matches!(
        array.read_region_vec(&[0, 0], &[big, big]),
        Err(Error::InvalidArgument(m)) if m.contains("overflows")
    ));
}
