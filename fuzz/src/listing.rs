//! `store_listing`: store listings as a host hands them over. Keys come from the input (any
//! bytes, one per line) and from grid positions it picks; they are stored (a valid shard, or
//! junk) in a store that lists, and walked through the Rust API and through the C ABI's store
//! table. Checked: a key parses to coordinates only when it is exactly the key the array
//! writes for a position inside its grid, and every such key parses back; `stored_shards` is
//! what the listing holds; a listed walk opens only listed shards and reports what a walk over
//! every grid position reports; the C API's `list` callback gives what the Rust store gives,
//! falls back on `SHARD_STORE_CANNOT_LIST` and fails on any other code; the draft format's
//! chunk-key translation accepts exactly the keys its own writer produces.

use super::{one_thread, seed_data, Cursor};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{c_char, c_void, CStr};
use std::sync::Mutex;
use zarrshard::ffi::array::{
    shard_array, shard_array_close, shard_array_open, shard_array_verify, shard_key_fn,
    shard_store_callbacks, SHARD_STORE_CANNOT_LIST, SHARD_STORE_VERSION,
};
use zarrshard::ffi::io::{shard_io_callbacks, SHARD_IO_NOT_FOUND, SHARD_IO_VERSION};
use zarrshard::ffi::shard_last_io_code;
use zarrshard::ffi::status::shard_status;
use zarrshard::{Array, Format, MemoryIo, ShardIo, Store};

/// How a configuration's metadata is stored and opened.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    V3,
    V2Prototype,
    Draft,
}

/// Listing configuration `k` (of [`LISTING_CONFIGS`]): how it is stored, its metadata
/// document, and what its shard keys look like as the specifications spell them (the text
/// before the first coordinate, and the separator), written down here rather than asked of
/// the library.
fn listing_config(k: usize) -> (Kind, Value, &'static str, char) {
    let crc = json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]);
    let v3 = |shape: Value, shard: Value, inner: Value, encoding: Value| {
        json!({
            "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
            "chunk_key_encoding": encoding, "fill_value": 0,
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": inner, "codecs": [{"name": "bytes"}],
                "index_codecs": crc, "index_location": "end"}}]
        })
    };
    let default = |sep: &str| json!({"name": "default", "configuration": {"separator": sep}});
    let v2 = |sep: &str| json!({"name": "v2", "configuration": {"separator": sep}});
    match k {
        // A 2×3 grid, `c/1/2`.
        0 => (
            Kind::V3,
            v3(json!([16, 12]), json!([8, 4]), json!([4, 2]), default("/")),
            "c/",
            '/',
        ),
        // `c.1.2`, a 3×4 grid with partial edge shards.
        1 => (
            Kind::V3,
            v3(json!([9, 13]), json!([4, 4]), json!([2, 2]), default(".")),
            "c.",
            '.',
        ),
        // v2 keys `1.0.4` over a 3×1×5 grid.
        2 => (
            Kind::V3,
            v3(
                json!([6, 2, 10]),
                json!([2, 2, 2]),
                json!([1, 2, 1]),
                v2("."),
            ),
            "",
            '.',
        ),
        // v2 keys with `/`: `1/0`.
        3 => (
            Kind::V3,
            v3(json!([4, 4]), json!([2, 2]), json!([1, 1]), v2("/")),
            "",
            '/',
        ),
        // Rank 0: the one shard is `c`.
        4 => (
            Kind::V3,
            v3(json!([]), json!([]), json!([]), default("/")),
            "c",
            '/',
        ),
        // Rank 0, v2: the one shard is `0`.
        5 => (
            Kind::V3,
            v3(json!([]), json!([]), json!([]), v2(".")),
            "0",
            '.',
        ),
        // A 2^30 × 2^30 grid: only a listing can walk it.
        6 => (
            Kind::V3,
            v3(
                json!([1u64 << 30, 1u64 << 31]),
                json!([1, 2]),
                json!([1, 1]),
                default("/"),
            ),
            "c/",
            '/',
        ),
        // Coordinates up to 20 digits.
        7 => (
            Kind::V3,
            v3(json!([u64::MAX - 1]), json!([1]), json!([1]), default("/")),
            "c/",
            '/',
        ),
        // The zarr v2 sharding prototype, `.` separator: `2.0`.
        8 => (
            Kind::V2Prototype,
            json!({
                "zarr_format": 2, "shape": [20, 20], "chunks": [5, 5], "shards": [2, 2],
                "shard_format": "indexed", "dtype": "|u1", "compressor": null,
                "fill_value": 0, "order": "C", "filters": null, "dimension_separator": "."
            }),
            "",
            '.',
        ),
        // The v3 draft's storage transformer: `data/root/a/c1/0`.
        _ => (
            Kind::Draft,
            json!({
                "shape": [8, 6], "data_type": "u1",
                "chunk_grid": {"type": "regular", "chunk_shape": [2, 3], "separator": "/"},
                "chunk_memory_layout": "C", "fill_value": 0, "extensions": [], "attributes": {},
                "compressor": null,
                "storage_transformers": [{
                    "extension": "https://purl.org/zarr/spec/storage_transformers/sharding/1.0",
                    "type": "indexed", "configuration": {"chunks_per_shard": [2, 1]}}]
            }),
            "data/root/a/c",
            '/',
        ),
    }
}

/// The number of listing configurations.
pub(crate) const LISTING_CONFIGS: usize = 10;

/// Grids up to this many positions are also walked without a listing, for comparison.
const SMALL_GRID: u64 = 4096;

/// A store in memory that lists (or not), and records which keys were opened.
struct ListedStore {
    objects: Mutex<BTreeMap<String, Vec<u8>>>,
    lists: bool,
    opened: Mutex<BTreeSet<String>>,
}

impl ListedStore {
    fn new(objects: &BTreeMap<String, Vec<u8>>, lists: bool) -> Self {
        ListedStore {
            objects: Mutex::new(objects.clone()),
            lists,
            opened: Mutex::default(),
        }
    }
}

impl Store for ListedStore {
    fn shard_io(&self, key: &str) -> zarrshard::Result<Box<dyn ShardIo>> {
        self.opened.lock().unwrap().insert(key.to_string());
        Ok(Box::new(match self.objects.lock().unwrap().get(key) {
            Some(v) => MemoryIo::from_bytes(v.clone()),
            None => MemoryIo::new(),
        }))
    }
    fn set(&self, key: &str, value: &[u8]) -> zarrshard::Result<()> {
        self.objects
            .lock()
            .unwrap()
            .insert(key.to_string(), value.to_vec());
        Ok(())
    }
    fn list_prefix(&self, prefix: &str) -> zarrshard::Result<Option<Vec<String>>> {
        if !self.lists {
            return Ok(None);
        }
        let objects = self.objects.lock().unwrap();
        Ok(Some(
            objects
                .keys()
                .filter(|k| k.starts_with(prefix))
                .cloned()
                .collect(),
        ))
    }
}

/// Open configuration `kind`'s array over `store`, its metadata stored first.
fn open(kind: Kind, meta: &Value, store: ListedStore) -> Array<ListedStore> {
    let text = serde_json::to_vec(meta).unwrap();
    let opened = match kind {
        Kind::V3 => {
            store.set("zarr.json", &text).unwrap();
            Array::open(store)
        }
        Kind::V2Prototype => {
            store.set(".zarray", &text).unwrap();
            Array::open(store)
        }
        Kind::Draft => {
            store.set("meta/root/a.array.json", &text).unwrap();
            Array::open_v3_draft(store, "a")
        }
    };
    let array = opened.expect("the listing configurations are valid");
    array.store().opened.lock().unwrap().clear();
    array
}

/// The problems a verify reports, as text.
fn problems(array: &Array<ListedStore>) -> Vec<String> {
    let found = array.verify().expect("an in-memory store does not fail");
    found.iter().map(|p| p.to_string()).collect()
}

/// Whether `key` names a metadata document of one of the formats.
fn is_metadata(key: &str) -> bool {
    matches!(key, "zarr.json" | ".zarray" | ".zattrs" | ".zgroup") || key.starts_with("meta/")
}

/// The canonical coordinates of `key` under `prefix` (digits only, no leading zero, no sign,
/// each fitting a u64), written independently of the library's parser.
fn canonical(key: &str, prefix: &str, separator: char, rank: usize) -> Option<Vec<u64>> {
    let rest = key.strip_prefix(prefix)?;
    if rank == 0 {
        return rest.is_empty().then(Vec::new);
    }
    let coords: Vec<u64> = rest
        .split(separator)
        .map(|part| part.parse().ok().filter(|v: &u64| v.to_string() == part))
        .collect::<Option<_>>()?;
    (coords.len() == rank).then_some(coords)
}

/// First byte: the configuration; second: flags (bit 0: also through the C ABI; bit 1: its
/// `list` answers `SHARD_STORE_CANNOT_LIST`, on grids small enough to walk whole; bit 2,
/// which wins over bit 1: its `list` fails); third: how many grid
/// positions to store (up to 8, each as one little-endian u64 per dimension, taken modulo the
/// grid); the rest: keys, one per line, any bytes. Every other key's object is a valid shard,
/// the others' hold junk.
pub fn store_listing(data: &[u8]) {
    one_thread();
    let mut input = Cursor(data);
    let (kind, meta, prefix, separator) = listing_config(input.u8() as usize % LISTING_CONFIGS);
    let flags = input.u8();
    let picks = input.u8() % 9;

    let probe = open(kind, &meta, ListedStore::new(&BTreeMap::new(), true));
    let grid = probe.metadata().grid_shape();
    let total: u64 = grid.iter().product();
    let layout = probe.metadata().shard_layout().expect("sharded");
    let valid = layout
        .encode_shard(&seed_data(layout.shard_repr().byte_size().unwrap() as usize))
        .unwrap();

    let mut generated = Vec::new();
    for _ in 0..picks {
        let coords: Vec<u64> = grid.iter().map(|n| input.u64_below(*n)).collect();
        generated.push(coords);
    }
    let lines: Vec<&[u8]> = input.rest().split(|b| *b == b'\n').collect();

    // Every key parses back to its coordinates.
    for coords in &generated {
        let key = probe.shard_key(coords);
        assert_eq!(probe.shard_coords(&key).as_ref(), Some(coords), "{key}");
    }
    // The keys to store: the generated positions' and the input's lines, valid shards and junk.
    let mut objects: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut raw_keys: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let generated_keys = generated.iter().map(|c| probe.shard_key(c).into_bytes());
    for (k, key) in generated_keys
        .chain(lines.iter().map(|l| l.to_vec()))
        .enumerate()
    {
        let object = if k % 2 == 0 {
            valid.clone()
        } else {
            key.clone()
        };
        if let Ok(text) = String::from_utf8(key.clone()) {
            // A metadata document in the store's root would change which array opens.
            if text.contains('\0') || is_metadata(&text) {
                continue;
            }
            objects.insert(text, object.clone());
        }
        raw_keys.push((key, object));
    }

    // A key parses exactly when it is canonical and inside the grid.
    let mut expected = BTreeSet::new();
    for key in objects.keys() {
        let parsed = probe.shard_coords(key);
        let oracle = canonical(key, prefix, separator, grid.len())
            .filter(|c| c.iter().zip(&grid).all(|(c, n)| c < n));
        assert_eq!(parsed, oracle, "key {key:?}");
        if let Some(coords) = parsed {
            assert_eq!(probe.shard_key(&coords), *key);
            expected.insert(coords);
        }
    }
    if kind == Kind::Draft {
        draft_keys(&probe, &lines, &generated);
    }

    let listed = open(kind, &meta, ListedStore::new(&objects, true));
    let stored = listed.stored_shards().unwrap();
    assert_eq!(stored, expected.iter().cloned().collect::<Vec<_>>());
    let found = problems(&listed);
    // A listed walk opens only the shards the listing holds.
    let stored_keys: BTreeSet<String> = stored.iter().map(|c| listed.shard_key(c)).collect();
    for key in listed.store().opened.lock().unwrap().iter() {
        assert!(stored_keys.contains(key), "opened {key:?}, not listed");
    }
    if kind == Kind::Draft {
        // A corrupt shard fails the listing of chunk keys, the same shard either way.
        let chunk_keys = |a: &Array<ListedStore>| a.list_chunk_keys("").map_err(|e| e.to_string());
        let keys = chunk_keys(&listed);
        if total <= SMALL_GRID {
            let unlisted = open(kind, &meta, ListedStore::new(&objects, false));
            assert_eq!(chunk_keys(&unlisted), keys);
        }
    }
    if total <= SMALL_GRID {
        let unlisted = open(kind, &meta, ListedStore::new(&objects, false));
        assert_eq!(unlisted.stored_shards().unwrap(), stored);
        assert_eq!(problems(&unlisted), found);
    }
    if kind == Kind::V3 && flags & 1 != 0 {
        through_the_c_api(&meta, &raw_keys, flags, &found, total);
    }
}

/// The draft's chunk-key translation accepts exactly the chunk keys its writer produces, and
/// names the shard holding each.
fn draft_keys(array: &Array<ListedStore>, lines: &[&[u8]], shards: &[Vec<u64>]) {
    let Format::V3Draft {
        data_prefix,
        separator,
        ..
    } = array.format()
    else {
        unreachable!("a draft configuration")
    };
    let per_shard = array
        .metadata()
        .shard_layout()
        .unwrap()
        .chunks_per_shard()
        .to_vec();
    let translate = |key: &str| {
        zarrshard::array::legacy::draft_shard_key(key, data_prefix, *separator, &per_shard)
    };
    for line in lines {
        let Ok(key) = std::str::from_utf8(line) else {
            continue;
        };
        let chunk = canonical(key, &format!("{data_prefix}c"), *separator, per_shard.len());
        let want = chunk.map(|c| {
            let shard: Vec<u64> = c.iter().zip(&per_shard).map(|(c, n)| c / n).collect();
            zarrshard::array::legacy::draft_key(data_prefix, *separator, &shard)
        });
        assert_eq!(translate(key).ok(), want, "chunk key {key:?}");
    }
    // The chunks of a shard all translate to its key.
    for shard in shards {
        let chunk: Vec<u64> = shard
            .iter()
            .zip(&per_shard)
            .map(|(s, n)| s * n + n - 1)
            .collect();
        let key = zarrshard::array::legacy::draft_key(data_prefix, *separator, &chunk);
        assert_eq!(translate(&key).unwrap(), array.shard_key(shard));
    }
}

/// The host of the C ABI walk: the objects by key (any bytes) and how `list` answers.
struct Host {
    objects: HashMap<Vec<u8>, Vec<u8>>,
    listed: Vec<Vec<u8>>,
    list_answer: i32,
    destroyed: Cell<u32>,
    problems: RefCell<Vec<String>>,
}

const LIST_FAILS: i32 = 7;

unsafe extern "C" fn host_list(
    userdata: *mut c_void,
    prefix: *const c_char,
    on_key: shard_key_fn,
    list_state: *mut c_void,
) -> i32 {
    // SAFETY: userdata is the `Host`, alive for the array's life; prefix is a C string.
    let (host, prefix) = unsafe { (&*(userdata as *const Host), CStr::from_ptr(prefix)) };
    let on_key = on_key.expect("the library passes its receiver");
    for key in &host.listed {
        if key.starts_with(prefix.to_bytes()) {
            // SAFETY: a key the library reads during the call.
            unsafe { on_key(list_state, key.as_ptr().cast(), key.len()) };
        }
    }
    host.list_answer
}

unsafe extern "C" fn host_destroy(userdata: *mut c_void) {
    // SAFETY: as in `host_list`.
    let host = unsafe { &*(userdata as *const Host) };
    host.destroyed.set(host.destroyed.get() + 1);
}

unsafe extern "C" fn host_open(
    userdata: *mut c_void,
    key: *const c_char,
    io: *mut shard_io_callbacks,
) -> i32 {
    // SAFETY: as in `host_list`; `io` is the zeroed table the library passes.
    let (host, key, io) = unsafe { (&*(userdata as *const Host), CStr::from_ptr(key), &mut *io) };
    let object: Box<Option<Vec<u8>>> = Box::new(host.objects.get(key.to_bytes()).cloned());
    io.version = SHARD_IO_VERSION;
    io.userdata = Box::into_raw(object).cast();
    io.read = Some(object_read);
    io.size = Some(object_size);
    io.destroy = Some(object_destroy);
    0
}

unsafe fn object<'a>(userdata: *mut c_void) -> &'a Option<Vec<u8>> {
    // SAFETY: the box `host_open` made, alive until `object_destroy`.
    unsafe { &*(userdata as *const Option<Vec<u8>>) }
}

unsafe extern "C" fn object_read(
    userdata: *mut c_void,
    offset: u64,
    len: usize,
    buf: *mut u8,
    read_out: *mut usize,
) -> i32 {
    let Some(bytes) = (unsafe { object(userdata) }) else {
        return SHARD_IO_NOT_FOUND;
    };
    let start = offset.min(bytes.len() as u64) as usize;
    let end = bytes.len().min(start.saturating_add(len));
    // SAFETY: the library passes `buf` valid for `len` bytes and `read_out` for one.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes[start..].as_ptr(), buf, end - start);
        *read_out = end - start;
    }
    0
}

unsafe extern "C" fn object_size(userdata: *mut c_void, size_out: *mut u64) -> i32 {
    let Some(bytes) = (unsafe { object(userdata) }) else {
        return SHARD_IO_NOT_FOUND;
    };
    // SAFETY: valid for one u64.
    unsafe { *size_out = bytes.len() as u64 };
    0
}

unsafe extern "C" fn object_destroy(userdata: *mut c_void) {
    // SAFETY: the box `host_open` made, destroyed once.
    drop(unsafe { Box::from_raw(userdata as *mut Option<Vec<u8>>) });
}

unsafe extern "C" fn on_problem(
    userdata: *mut c_void,
    key: *const c_char,
    _chunk: *const u64,
    _rank: usize,
    _status: shard_status,
    message: *const c_char,
) -> i32 {
    // SAFETY: as in `host_list`; key and message are C strings during the call.
    let (host, key, message) = unsafe {
        (
            &*(userdata as *const Host),
            CStr::from_ptr(key).to_string_lossy(),
            CStr::from_ptr(message).to_string_lossy(),
        )
    };
    host.problems.borrow_mut().push(format!("{key}: {message}"));
    0
}

/// `shard_array_verify` over a host store whose `list` hands over `keys` as raw bytes (not
/// UTF-8 ones too): the same problems as the Rust walk; with `SHARD_STORE_CANNOT_LIST` the
/// same again (small grids); a failing `list` is `SHARD_ERR_IO` with its code.
fn through_the_c_api(
    meta: &Value,
    keys: &[(Vec<u8>, Vec<u8>)],
    flags: u8,
    found: &[String],
    total: u64,
) {
    let list_answer = match flags >> 1 & 3 {
        1 if total <= SMALL_GRID => SHARD_STORE_CANNOT_LIST,
        2 | 3 => LIST_FAILS,
        _ => 0,
    };
    let host = Host {
        objects: keys.iter().cloned().collect(),
        listed: keys.iter().map(|(k, _)| k.clone()).collect(),
        list_answer,
        destroyed: Cell::new(0),
        problems: RefCell::default(),
    };
    let table = shard_store_callbacks {
        version: SHARD_STORE_VERSION,
        flags: 0,
        userdata: &host as *const Host as *mut c_void,
        open_object: Some(host_open),
        destroy: Some(host_destroy),
        list: Some(host_list),
    };
    let text = serde_json::to_string(meta).unwrap();
    let mut array: *mut shard_array = std::ptr::null_mut();
    // SAFETY: valid text, table and out pointer; the host outlives the handle.
    let status = unsafe { shard_array_open(text.as_ptr().cast(), text.len(), &table, &mut array) };
    assert_eq!(status, shard_status::SHARD_OK);
    let mut count = u64::MAX;
    // SAFETY: an open handle, a callback with its userdata, a valid out pointer.
    let status = unsafe { shard_array_verify(array, Some(on_problem), table.userdata, &mut count) };
    // SAFETY: opened above, closed once.
    unsafe { shard_array_close(array) };
    assert_eq!(host.destroyed.get(), 1);
    if list_answer == LIST_FAILS {
        assert_eq!(status, shard_status::SHARD_ERR_IO);
        assert_eq!(shard_last_io_code(), LIST_FAILS);
        return;
    }
    assert_eq!(status, shard_status::SHARD_OK);
    assert_eq!(*host.problems.borrow(), found);
    assert_eq!(count, found.len() as u64);
}

/// Seeds: each configuration with its first and last grid positions, plus near-miss keys.
pub fn listing_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    for k in 0..LISTING_CONFIGS {
        let (kind, meta, _, _) = listing_config(k);
        let probe = open(kind, &meta, ListedStore::new(&BTreeMap::new(), true));
        let grid = probe.metadata().grid_shape();
        let mut seed = vec![k as u8, 1, 2];
        for _ in &grid {
            seed.extend(0u64.to_le_bytes());
        }
        for n in &grid {
            seed.extend((n - 1).to_le_bytes());
        }
        let last: Vec<u64> = grid.iter().map(|n| n - 1).collect();
        let key = probe.shard_key(&last);
        let near = [
            format!("{key}0"),
            key.replace('1', "01"),
            format!("{key}/"),
            key.replacen(|c: char| c.is_ascii_digit(), "+", 1),
            "zarr.json".into(),
        ];
        seed.extend(near.join("\n").into_bytes());
        out.push(("store_listing", format!("config{k}"), seed.clone()));
        seed[1] = 3;
        out.push((
            "store_listing",
            format!("config{k}-cannot-list"),
            seed.clone(),
        ));
        seed[1] = 5;
        out.push(("store_listing", format!("config{k}-list-fails"), seed));
    }
    out
}
