//! The I/O back ends: byte-range semantics, missing objects, short reads, writes.

use serde_json::json;
use std::sync::Arc;
use zarrshard::*;

fn check_ranges(io: &dyn ShardIo) {
    let read = |r| io.read(r).unwrap().unwrap();
    assert_eq!(read(ByteRange::FromStart(2, Some(3))).data, b"234");
    assert_eq!(
        read(ByteRange::FromStart(8, Some(5))).data,
        b"89",
        "short read at the end"
    );
    assert_eq!(
        read(ByteRange::FromStart(20, Some(5))).data,
        b"",
        "past the end"
    );
    assert_eq!(read(ByteRange::FromStart(7, None)).data, b"789");
    assert_eq!(read(ByteRange::Suffix(4)).data, b"6789");
    assert_eq!(
        read(ByteRange::Suffix(40)).data,
        b"0123456789",
        "suffix longer than the object"
    );
    assert_eq!(read(ByteRange::Suffix(4)).object_size, Some(10));
    assert_eq!(io.size().unwrap(), Some(10));
}

#[test]
fn memory_and_file_agree() {
    check_ranges(&MemoryIo::from_bytes(b"0123456789".to_vec()));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/shard");
    let f = FileIo::new(&path);
    assert!(
        f.read(ByteRange::Suffix(4)).unwrap().is_none(),
        "missing file reads as None"
    );
    assert_eq!(f.size().unwrap(), None);
    f.write_at(0, b"0123456789").unwrap();
    check_ranges(&f);
    f.write_at(12, b"xy").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"0123456789\0\0xy");
    f.truncate(10).unwrap();
    check_ranges(&f);
    f.delete().unwrap();
    f.delete().unwrap(); // deleting a missing object is fine
    assert!(!path.exists());
    assert!(f.read(ByteRange::Suffix(1)).unwrap().is_none());

    let m = MemoryIo::new();
    assert!(m.read(ByteRange::Suffix(1)).unwrap().is_none());
    m.write_at(3, b"ab").unwrap();
    assert_eq!(m.bytes().unwrap(), b"\0\0\0ab");
    m.delete().unwrap();
    assert_eq!(m.bytes(), None);
}

#[test]
fn file_errors_keep_the_os_code() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the object should be: reading it fails with EISDIR.
    let f = FileIo::new(dir.path());
    match f.read(ByteRange::Suffix(4)) {
        Err(Error::Io { code, .. }) => assert_eq!(code, libc::EISDIR),
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

#[test]
fn whole_shard_is_one_read() {
    let config = json!({"chunk_shape": [2], "codecs": [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]});
    let l = ShardLayout::from_config_json(&config, DataType::UInt8, vec![8], FillValue(vec![9]))
        .unwrap();
    let data = vec![1, 2, 9, 9, 5, 6, 7, 8];
    let io = CountingIo::new(MemoryIo::from_bytes(l.encode_shard(&data).unwrap()));
    assert_eq!(read_whole_shard(&l, &io).unwrap().unwrap(), data);
    assert_eq!(io.reads(), 1);
    assert_eq!(read_whole_shard(&l, &MemoryIo::new()).unwrap(), None);
    // The reader shares one index among threads.
    let reader = Arc::new(
        ShardReader::open(Arc::new(l), MemoryIo::from_bytes(io.inner.bytes().unwrap())).unwrap(),
    );
    let handles: Vec<_> = (0..8u64)
        .map(|t| {
            let r = reader.clone();
            std::thread::spawn(move || r.read_chunk(&[t % 4]).unwrap())
        })
        .collect();
    for (t, h) in handles.into_iter().enumerate() {
        let i = t % 4;
        assert_eq!(h.join().unwrap(), data[2 * i..2 * i + 2]);
    }
}

#[test]
fn raw_bits_are_never_swapped() {
    // r24 elements stored by a big-endian `bytes` codec keep their byte order.
    let config = json!({"chunk_shape": [2], "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]});
    let dt = DataType::parse("r24").unwrap();
    let l = ShardLayout::from_config_json(&config, dt, vec![2], FillValue(vec![0, 0, 0])).unwrap();
    let object = [
        vec![1u8, 2, 3, 4, 5, 6],
        [0u64, 6].iter().flat_map(|v| v.to_le_bytes()).collect(),
    ]
    .concat();
    let mut out = vec![0u8; 6];
    l.decode_shard_into(&object, &mut out).unwrap();
    assert_eq!(out, vec![1, 2, 3, 4, 5, 6]);
}

/// `put_parts` writes the parts in order, as one object, replacing what was there: through
/// `writev` on files (3000 parts: more than one call's IOV_MAX of 1024), by concatenation
/// elsewhere; empty parts are skipped.
#[test]
fn put_parts_is_put_of_the_concatenation() {
    let parts: Vec<Vec<u8>> = (0..3000u32)
        .map(|i| (0..i % 7).map(|k| (i * 31 + k) as u8).collect())
        .collect();
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let want = parts.concat();
    let dir = tempfile::tempdir().unwrap();
    let file = FileIo::new(dir.path().join("a/shard"));
    file.put(&vec![7u8; want.len() + 100]).unwrap(); // a longer object first
    let memory = MemoryIo::new();
    for io in [&file as &dyn ShardIo, &memory] {
        io.put_parts(&refs).unwrap();
        assert_eq!(io.size().unwrap(), Some(want.len() as u64));
        assert_eq!(
            io.read(ByteRange::FromStart(0, None))
                .unwrap()
                .unwrap()
                .data,
            want
        );
    }
}

/// A large object (on Linux, allocated on disk before it is written) is written whole and
/// exactly: its size is the parts' total and its bytes theirs, whether it replaces a longer
/// object or a shorter one, and no temporary file is left beside it.
#[test]
fn put_parts_of_a_large_object_is_exact() {
    let parts: Vec<Vec<u8>> = (0..200u32)
        .map(|i| (0..(i * 37) % 4099).map(|k| (i ^ k) as u8).collect())
        .collect();
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let want = parts.concat();
    assert!(want.len() > 256 << 10, "{} bytes", want.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c/0/0");
    let file = FileIo::new(&path);
    for before in [want.len() + 5000, 10] {
        file.put(&vec![9u8; before]).unwrap();
        file.put_parts(&refs).unwrap();
        assert_eq!(file.size().unwrap(), Some(want.len() as u64));
        assert!(std::fs::read(&path).unwrap() == want, "the bytes written");
        let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["0"]);
    }
}

/// `read_many_reusing` on files reads into the spare buffers (taken from the end, the
/// allocation kept when large enough, a fresh one otherwise, unused ones left), returns exactly
/// the bytes read (no stale bytes from a buffer's earlier contents, even on a short read), and
/// a missing file is `None` with the spare buffers untouched. A memory object copies into them
/// alike; `CountingIo` counts one read per range.
#[test]
fn read_many_reusing_recycles_buffers_and_never_returns_stale_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let f = FileIo::new(dir.path().join("shard"));
    f.write_at(0, b"0123456789").unwrap();
    let ranges = [
        ByteRange::FromStart(2, Some(3)),
        ByteRange::FromStart(8, Some(5)), // short: the object ends after 2 bytes
        ByteRange::FromStart(0, Some(4)),
    ];
    let unused = vec![b'u'; 4];
    let (big, stale, small) = (vec![b'x'; 64], vec![b'y'; 64], Vec::with_capacity(1));
    let (big_ptr, stale_ptr) = (big.as_ptr(), stale.as_ptr());
    let mut spare = vec![unused.clone(), small, stale, big];
    let got = f.read_many_reusing(&ranges, &mut spare).unwrap();
    let got: Vec<Vec<u8>> = got.into_iter().map(|o| o.unwrap().data).collect();
    assert_eq!(got, [b"234".to_vec(), b"89".to_vec(), b"0123".to_vec()]);
    assert_eq!(
        got[0].as_ptr(),
        big_ptr,
        "the last spare buffer, large enough, is reused"
    );
    assert_eq!(
        got[1].as_ptr(),
        stale_ptr,
        "a short read into a used buffer: cut, not stale"
    );
    assert_eq!(
        spare,
        std::slice::from_ref(&unused),
        "buffers not needed stay"
    );

    let missing = FileIo::new(dir.path().join("missing"));
    let mut spare = vec![vec![b'x'; 8]];
    let got = missing
        .read_many_reusing(&[ByteRange::FromStart(0, Some(4))], &mut spare)
        .unwrap();
    assert_eq!(got, [None]);

    // A memory object copies into the buffers the same way.
    let mem = MemoryIo::from_bytes(b"0123456789".to_vec());
    let reused = vec![b'u'; 4];
    let reused_ptr = reused.as_ptr();
    let mut spare = vec![reused];
    let got = mem.read_many_reusing(&ranges[..2], &mut spare).unwrap();
    let got: Vec<Vec<u8>> = got.into_iter().map(|o| o.unwrap().data).collect();
    assert_eq!(got, [b"234".to_vec(), b"89".to_vec()]);
    assert_eq!(
        got[0].as_ptr(),
        reused_ptr,
        "a large enough buffer is reused"
    );
    assert!(spare.is_empty());

    let counting = CountingIo::new(FileIo::new(dir.path().join("shard")));
    let got = counting
        .read_many_reusing(&ranges[..2], &mut Vec::new())
        .unwrap();
    assert_eq!(got[0].as_ref().unwrap().data, b"234");
    assert_eq!((counting.reads(), counting.bytes_read()), (2, 5));
    counting.read_many(&ranges).unwrap();
    assert_eq!((counting.reads(), counting.bytes_read()), (5, 14));
}

#[test]
fn two_whole_writes_of_one_file_at_once_leave_one_of_them_whole() {
    // Each write goes through a temporary of its own: with one temporary per process (as
    // before), one write's `O_TRUNC` and bytes could land in the other's file, and the rename
    // publish a mixture.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("0");
    let a = vec![b'a'; 300_000];
    let b = vec![b'b'; 200_000];
    for _ in 0..20 {
        std::thread::scope(|s| {
            for (bytes, half) in [(&a, 150_000), (&b, 100_000)] {
                let path = &path;
                s.spawn(move || {
                    for _ in 0..5 {
                        let io = FileIo::new(path);
                        io.put_parts(&[&bytes[..half], &bytes[half..]]).unwrap();
                    }
                });
            }
        });
        let now = std::fs::read(&path).unwrap();
        assert!(now == a || now == b, "a mixture of {} bytes", now.len());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
