//! The C ABI driven as a C host would drive it: a random sequence of open / read / read_raw /
//! read_many / info / write / write_raw / erase / finalize / close over one in-memory object,
//! through a callback table whose callbacks fail, return short, or over-report at a call the
//! fuzzer picks. Checked: every status is one the function documents; `destroy` runs exactly
//! once per successful open; a write callback failure is never followed by a successful
//! finalize; and when no fault was injected, what a read returns equals what was written.
//!
//! Tables of version 1, 2 and 3; a version-3 table may carry the new-object callbacks (or,
//! refused at open, some but not all of them). With them, also checked: every new object the
//! host created is committed or discarded before the call that created it returns, and never
//! used after; `write_new` never writes a byte twice and `commit_new` comes with every byte
//! written and the right size; and a finalize that fails without touching the object in place
//! leaves the old object as it was, which later reads then check chunk by chunk.

use super::Cursor;
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use zarrshard::ffi::codec::{shard_codec, shard_codec_free, shard_codec_from_config};
use zarrshard::ffi::io::{shard_io_callbacks, SHARD_IO_NOT_FOUND, SHARD_IO_VERSION};
use zarrshard::ffi::shard::*;
use zarrshard::ffi::status::shard_status::{self, *};

/// What an injected fault does.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    /// The callback returns an error code.
    Error,
    /// A read returns fewer bytes than it could; a write writes half, then fails.
    Short,
    /// A read reports one byte more than it was asked for (a contract violation).
    OverReport,
}

/// The host: one object and the fault plan.
struct Host {
    object: RefCell<Option<Vec<u8>>>,
    calls: Cell<u32>,
    /// Fault at this callback number (counted from the plan's start); 0 = none.
    fail_at: Cell<u32>,
    fault: Cell<Fault>,
    /// A fault fired since the flag was last cleared.
    fired: Cell<bool>,
    /// ... and it was in a write-side callback (write, truncate, remove).
    fired_write: Cell<bool>,
    destroyed: Cell<u32>,
    /// New objects created and not yet committed or discarded.
    pending: RefCell<Vec<NewObject>>,
    /// `create_new` calls so far, failed ones included (the handle it gives is this count,
    /// never 0).
    created: Cell<usize>,
    /// Calls that change the object in place (write, truncate, remove).
    in_place: Cell<u32>,
}

/// A new object the host holds for the library (version-3 tables).
struct NewObject {
    /// What `create_new` gave the library (as a pointer).
    handle: usize,
    bytes: Vec<u8>,
    /// Which bytes `write_new` has written.
    written: Vec<bool>,
}

const HOST_ERROR: i32 = 5;

impl Host {
    /// The fault for this callback, if one is due.
    fn fault(&self) -> Option<Fault> {
        self.calls.set(self.calls.get() + 1);
        (self.calls.get() == self.fail_at.get()).then(|| {
            self.fired.set(true);
            self.fault.get()
        })
    }

    /// The object for a read callback and the fault to apply, or the code to return.
    fn for_read(&self) -> Result<(std::cell::Ref<'_, Vec<u8>>, Option<Fault>), i32> {
        let f = self.fault();
        if f == Some(Fault::Error) {
            return Err(HOST_ERROR);
        }
        std::cell::Ref::filter_map(self.object.borrow(), Option::as_ref)
            .map(|o| (o, f))
            .map_err(|_| SHARD_IO_NOT_FOUND)
    }

    /// The fault for this write-side callback, if one is due.
    fn write_fault(&self) -> Option<Fault> {
        let f = self.fault();
        self.fired_write.set(self.fired_write.get() || f.is_some());
        f
    }

    /// Take new object `new` out of the pending list (commit and discard).
    fn take_pending(&self, new: *mut c_void) -> NewObject {
        let mut pending = self.pending.borrow_mut();
        let at = pending.iter().position(|p| p.handle == new.addr());
        pending.remove(at.expect("commit_new or discard_new for a new object that is not pending"))
    }
}

unsafe fn host<'a>(userdata: *mut c_void) -> &'a Host {
    // SAFETY: userdata is the `Host` the sequence owns for its whole run.
    unsafe { &*(userdata as *const Host) }
}

/// Copy `src` into the library's buffer, applying a fault.
unsafe fn deliver(src: &[u8], len: usize, buf: *mut u8, read_out: *mut usize, f: Option<Fault>) {
    let n = match f {
        Some(Fault::Short) => src.len() / 2,
        _ => src.len(),
    };
    // SAFETY: the library passes `buf` valid for `len >= n` bytes.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), buf, n) };
    // SAFETY: valid for one usize.
    unsafe {
        *read_out = match f {
            Some(Fault::OverReport) => len + 1,
            _ => n,
        }
    };
}

unsafe extern "C" fn cb_read(
    ud: *mut c_void,
    offset: u64,
    len: usize,
    buf: *mut u8,
    read_out: *mut usize,
) -> i32 {
    let (obj, f) = match unsafe { host(ud) }.for_read() {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    let start = (offset.min(obj.len() as u64)) as usize;
    let end = obj.len().min(start.saturating_add(len));
    unsafe { deliver(&obj[start..end], len, buf, read_out, f) };
    0
}

unsafe extern "C" fn cb_read_suffix(
    ud: *mut c_void,
    len: usize,
    buf: *mut u8,
    read_out: *mut usize,
    size_out: *mut u64,
) -> i32 {
    let (obj, f) = match unsafe { host(ud) }.for_read() {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    unsafe { deliver(&obj[obj.len().saturating_sub(len)..], len, buf, read_out, f) };
    unsafe { *size_out = obj.len() as u64 };
    0
}

unsafe extern "C" fn cb_size(ud: *mut c_void, size_out: *mut u64) -> i32 {
    let h = unsafe { host(ud) };
    if h.fault().is_some() {
        return HOST_ERROR;
    }
    match h.object.borrow().as_ref() {
        Some(o) => {
            unsafe { *size_out = o.len() as u64 };
            0
        }
        None => SHARD_IO_NOT_FOUND,
    }
}

unsafe extern "C" fn cb_write(ud: *mut c_void, offset: u64, buf: *const u8, len: usize) -> i32 {
    let h = unsafe { host(ud) };
    h.in_place.set(h.in_place.get() + 1);
    let f = h.write_fault();
    let n = match f {
        Some(Fault::Error) => return HOST_ERROR,
        Some(_) => len / 2,
        None => len,
    };
    // SAFETY: the library passes `buf` valid for `len` bytes.
    let data = unsafe { std::slice::from_raw_parts(buf, n) };
    let mut obj = h.object.borrow_mut();
    let obj = obj.get_or_insert_with(Vec::new);
    let end = offset as usize + n;
    if obj.len() < end {
        obj.resize(end, 0);
    }
    obj[offset as usize..end].copy_from_slice(data);
    if f.is_some() {
        HOST_ERROR
    } else {
        0
    }
}

unsafe extern "C" fn cb_truncate(ud: *mut c_void, len: u64) -> i32 {
    let h = unsafe { host(ud) };
    h.in_place.set(h.in_place.get() + 1);
    if h.write_fault().is_some() {
        return HOST_ERROR;
    }
    h.object
        .borrow_mut()
        .get_or_insert_with(Vec::new)
        .resize(len as usize, 0);
    0
}

unsafe extern "C" fn cb_remove(ud: *mut c_void) -> i32 {
    let h = unsafe { host(ud) };
    h.in_place.set(h.in_place.get() + 1);
    if h.write_fault().is_some() {
        return HOST_ERROR;
    }
    *h.object.borrow_mut() = None;
    0
}

unsafe extern "C" fn cb_destroy(ud: *mut c_void) {
    let h = unsafe { host(ud) };
    h.destroyed.set(h.destroyed.get() + 1);
}

unsafe extern "C" fn cb_read_vectored(
    ud: *mut c_void,
    count: usize,
    offsets: *const u64,
    lens: *const usize,
    bufs: *const *mut u8,
    read_outs: *mut usize,
) -> i32 {
    for k in 0..count {
        // SAFETY: the library passes arrays of `count` entries.
        let rc = unsafe {
            cb_read(
                ud,
                *offsets.add(k),
                *lens.add(k),
                *bufs.add(k),
                read_outs.add(k),
            )
        };
        if rc != 0 {
            return rc;
        }
    }
    0
}

unsafe extern "C" fn cb_create_new(ud: *mut c_void, new_out: *mut *mut c_void) -> i32 {
    let h = unsafe { host(ud) };
    h.created.set(h.created.get() + 1);
    if h.write_fault().is_some() {
        return HOST_ERROR;
    }
    h.pending.borrow_mut().push(NewObject {
        handle: h.created.get(),
        bytes: Vec::new(),
        written: Vec::new(),
    });
    // SAFETY: the library passes `new_out` valid for one pointer.
    // A token, never dereferenced: a pointer without provenance (no integer-to-pointer cast).
    unsafe { *new_out = std::ptr::without_provenance_mut(h.created.get()) };
    0
}

unsafe extern "C" fn cb_write_new(
    ud: *mut c_void,
    new: *mut c_void,
    offset: u64,
    buf: *const u8,
    len: usize,
) -> i32 {
    let h = unsafe { host(ud) };
    let mut pending = h.pending.borrow_mut();
    let object = pending
        .iter_mut()
        .find(|p| p.handle == new.addr())
        .expect("write_new for a new object that is not pending");
    let f = h.write_fault();
    if f == Some(Fault::Error) {
        return HOST_ERROR;
    }
    let n = if f.is_some() { len / 2 } else { len };
    // SAFETY: the library passes `buf` valid for `len` bytes.
    let data = unsafe { std::slice::from_raw_parts(buf, n) };
    let end = offset as usize + n;
    if object.bytes.len() < end {
        object.bytes.resize(end, 0);
        object.written.resize(end, false);
    }
    let at = offset as usize..end;
    assert!(
        object.written[at.clone()].iter().all(|w| !w),
        "write_new wrote a byte of the new object twice"
    );
    object.bytes[at.clone()].copy_from_slice(data);
    object.written[at].fill(true);
    if f.is_some() {
        HOST_ERROR
    } else {
        0
    }
}

unsafe extern "C" fn cb_commit_new(ud: *mut c_void, new: *mut c_void, len: u64) -> i32 {
    let h = unsafe { host(ud) };
    let object = h.take_pending(new);
    // Failing, the host releases the new object all the same and keeps the old one.
    if h.write_fault().is_some() {
        return HOST_ERROR;
    }
    assert_eq!(
        object.bytes.len() as u64,
        len,
        "commit_new's size is where the writes end"
    );
    assert!(
        object.written.iter().all(|w| *w),
        "commit_new of a new object with gaps"
    );
    *h.object.borrow_mut() = Some(object.bytes);
    0
}

unsafe extern "C" fn cb_discard_new(ud: *mut c_void, new: *mut c_void) {
    unsafe { host(ud) }.take_pending(new);
}

/// What the fuzzer's sequence expects of one inner chunk.
#[derive(Clone, PartialEq)]
enum Expect {
    Fill,
    Data(Vec<u8>),
    /// Raw bytes were written: whatever they decode to.
    Unknown,
}

/// A layout the sequence runs on: sharding configuration, data type, shard shape, fill value
/// JSON, element size.
struct Config {
    sharding: &'static str,
    dtype: &'static str,
    shape: &'static [u64],
    chunk: &'static [u64],
    fill: &'static str,
    elem: usize,
    fill_bytes: &'static [u8],
}

/// gzip after `bytes` in the second layout; under Miri nothing, because Miri's Stacked Borrows
/// check stops in zlib-rs 0.6.8's own deallocation when an encoder is dropped
/// (`zlib_rs::allocate::zfree_rust`), which is not this library's code.
#[cfg(not(miri))]
macro_rules! second_codec {
    () => {
        r#", {"name": "gzip", "configuration": {"level": 1}}"#
    };
}
#[cfg(miri)]
macro_rules! second_codec {
    () => {
        ""
    };
}

/// Number of layouts a sequence can pick.
pub(crate) const CONFIG_COUNT: usize = CONFIGS.len();

/// Codecs without C code (no zstd, no blosc), so Miri can run the replay too.
const CONFIGS: [Config; 3] = [
    Config {
        sharding: r#"{"chunk_shape": [2, 2], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}], "index_location": "end"}"#,
        dtype: "uint16",
        shape: &[4, 4],
        chunk: &[2, 2],
        fill: "0",
        elem: 2,
        fill_bytes: &[0, 0],
    },
    Config {
        sharding: concat!(
            r#"{"chunk_shape": [2], "codecs": [{"name": "bytes"}"#,
            second_codec!(),
            r#"], "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "index_location": "start"}"#
        ),
        dtype: "uint8",
        shape: &[8],
        chunk: &[2],
        fill: "7",
        elem: 1,
        fill_bytes: &[7],
    },
    Config {
        sharding: r#"{"chunk_shape": [2, 2], "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "crc32c"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "crc32c"}], "index_location": "end"}"#,
        dtype: "int32",
        shape: &[4, 2],
        chunk: &[2, 2],
        fill: "-1",
        elem: 4,
        fill_bytes: &[0xff; 4],
    },
];

/// Fail unless `s` is one of the statuses the function's documentation lists.
fn check(what: &str, s: shard_status, documented: &[shard_status]) -> shard_status {
    assert!(
        s == SHARD_OK || documented.contains(&s),
        "{what} returned {s:?}, which its documentation does not list"
    );
    s
}

const OPEN: &[shard_status] = &[
    SHARD_ERR_NULL_POINTER,
    SHARD_ERR_INVALID_ARGUMENT,
    SHARD_ERR_IO,
    SHARD_ERR_CORRUPT,
    SHARD_ERR_CHECKSUM,
    SHARD_ERR_UNSUPPORTED,
];
const READ: &[shard_status] = &[
    SHARD_ERR_NULL_POINTER,
    SHARD_ERR_INVALID_ARGUMENT,
    SHARD_ERR_BUFFER_SIZE,
    SHARD_ERR_IO,
    SHARD_ERR_CORRUPT,
    SHARD_ERR_CHECKSUM,
    SHARD_ERR_INVALID_STATE,
];
const READ_RAW: &[shard_status] = &[
    SHARD_ERR_NULL_POINTER,
    SHARD_ERR_INVALID_ARGUMENT,
    SHARD_ERR_BUFFER_SIZE,
    SHARD_ERR_IO,
    SHARD_ERR_CORRUPT,
    SHARD_ERR_INVALID_STATE,
];
const INFO: &[shard_status] = &[
    SHARD_ERR_NULL_POINTER,
    SHARD_ERR_INVALID_ARGUMENT,
    SHARD_ERR_BUSY,
];
const WRITE: &[shard_status] = &[
    SHARD_ERR_NULL_POINTER,
    SHARD_ERR_INVALID_ARGUMENT,
    SHARD_ERR_BUFFER_SIZE,
    SHARD_ERR_IO,
    SHARD_ERR_INVALID_STATE,
    SHARD_ERR_BUSY,
    SHARD_ERR_UNSUPPORTED,
];
const ERASE: &[shard_status] = &[
    SHARD_ERR_NULL_POINTER,
    SHARD_ERR_INVALID_ARGUMENT,
    SHARD_ERR_INVALID_STATE,
    SHARD_ERR_BUSY,
];
const FINALIZE: &[shard_status] = &[
    SHARD_ERR_NULL_POINTER,
    SHARD_ERR_IO,
    SHARD_ERR_INVALID_STATE,
    SHARD_ERR_BUSY,
    SHARD_ERR_UNSUPPORTED,
];

/// The open handle and what the sequence knows about it.
struct Open {
    handle: *mut shard_handle,
    mode: u32,
    /// What the handle's writes have made of each chunk (write handles).
    working: Option<Vec<Expect>>,
    /// A `write` callback failure was reported by a write call.
    write_failed: bool,
    finalized: bool,
    /// A fault fired while the handle was open.
    faulted: bool,
}

/// The sequence's state: the codec, the host, the open handle, and what the object holds.
struct Sequence<'a> {
    cfg: &'a Config,
    codec: *mut shard_codec,
    host: &'a Host,
    open: Option<Open>,
    /// What each chunk of the object reads as; `None` when unknown (a fault, or a write handle
    /// closed unfinished).
    committed: Option<Vec<Expect>>,
    opens: u32,
}

impl Sequence<'_> {
    fn num_chunks(&self) -> usize {
        self.cfg
            .shape
            .iter()
            .zip(self.cfg.chunk)
            .map(|(s, c)| (s / c) as usize)
            .product()
    }

    fn nbytes(&self) -> usize {
        self.cfg.chunk.iter().product::<u64>() as usize * self.cfg.elem
    }

    fn chunks_per_shard(&self) -> Vec<u64> {
        let shape = self.cfg.shape.iter().zip(self.cfg.chunk);
        shape.map(|(s, c)| s / c).collect()
    }

    /// Coordinates from the input: usually in range, sometimes one past; the rank usually
    /// right. Returns the coordinates, the rank to pass, and the linear index when valid.
    fn coords(&self, input: &mut Cursor) -> (Vec<u64>, usize, Option<usize>) {
        let b = input.u8();
        let per = self.chunks_per_shard();
        let mut coords: Vec<u64> = per.iter().map(|&p| input.u8() as u64 % (p + 1)).collect();
        let mut rank = coords.len();
        if b % 16 == 0 {
            rank += 1;
            coords.push(0);
        }
        let linear = self.linear(&coords);
        (coords, rank, linear)
    }

    fn handle(&self) -> *mut shard_handle {
        self.open
            .as_ref()
            .map_or(std::ptr::null_mut(), |o| o.handle)
    }

    fn expect_read(&self, linear: Option<usize>, got: &[u8]) {
        let (Some(i), Some(model)) = (linear, &self.committed) else {
            return;
        };
        let fill: Vec<u8> = self.cfg.fill_bytes.repeat(got.len() / self.cfg.elem);
        match &model[i] {
            Expect::Fill => assert_eq!(got, fill, "chunk {i} should read as the fill value"),
            Expect::Data(d) => assert_eq!(got, d, "chunk {i} should read as written"),
            Expect::Unknown => {}
        }
    }

    fn open(&mut self, input: &mut Cursor) {
        self.close();
        let b = input.u8();
        let mode = (b % 6) as u32; // 5 is not a mode
        let flags = match input.u8() % 8 {
            7 => 4, // an unknown flag
            f => (f % 4) as u32,
        };
        let opt = input.u8();
        // Bit 7: the new-object callbacks, with one more byte: bit 2 leaves out the one that
        // bits 0-1 name (refused at open), bit 3 asks for a version-2 table (they are ignored).
        let new_opt = if opt & 128 != 0 { input.u8() } else { 0 };
        let version = match (opt & 1 != 0, new_opt & 8 != 0) {
            (true, _) => 1,
            (false, true) => 2,
            (false, false) => SHARD_IO_VERSION,
        };
        let with = |k: u8| opt & 128 != 0 && !(new_opt & 4 != 0 && new_opt & 3 == k);
        let partial = opt & 128 != 0 && new_opt & 4 != 0;
        let table = shard_io_callbacks {
            version,
            userdata: self.host as *const Host as *mut c_void,
            read: Some(cb_read),
            read_suffix: (opt & 2 != 0).then_some(cb_read_suffix as _),
            size: (opt & 4 != 0).then_some(cb_size as _),
            write: (opt & 8 == 0).then_some(cb_write as _),
            truncate: (opt & 16 == 0).then_some(cb_truncate as _),
            remove: (opt & 32 == 0).then_some(cb_remove as _),
            destroy: Some(cb_destroy),
            read_vectored: (opt & 64 != 0).then_some(cb_read_vectored as _),
            create_new: with(0).then_some(cb_create_new as _),
            write_new: with(1).then_some(cb_write_new as _),
            commit_new: with(2).then_some(cb_commit_new as _),
            discard_new: with(3).then_some(cb_discard_new as _),
        };
        // The contract: a host without `truncate` or `size` writes shards to a new object.
        if (mode == 1 || mode == 2) && opt & 16 != 0 && opt & 4 == 0 {
            *self.host.object.borrow_mut() = None;
            self.committed = Some(vec![Expect::Fill; self.num_chunks()]);
        }
        // A fault that fires while no handle is open changes nothing.
        self.host.fired.set(false);
        self.host.fired_write.set(false);
        let mut handle = std::ptr::null_mut();
        let destroyed = self.host.destroyed.get();
        let s = unsafe { shard_open_ex(self.codec, &table, mode, flags, &mut handle) };
        check("shard_open_ex", s, OPEN);
        if partial && version == 3 {
            assert_eq!(
                s, SHARD_ERR_INVALID_ARGUMENT,
                "a table with some but not all new-object callbacks"
            );
        }
        assert_eq!(
            self.host.destroyed.get(),
            destroyed,
            "destroy called by open"
        );
        if s != SHARD_OK {
            assert!(handle.is_null(), "a failed open wrote its handle");
            return;
        }
        self.opens += 1;
        let fresh = vec![Expect::Fill; self.num_chunks()];
        let working = match mode {
            0 => None,
            1 | 2 => Some(fresh),
            _ => self.committed.clone(),
        };
        self.open = Some(Open {
            handle,
            mode,
            working,
            write_failed: false,
            finalized: false,
            faulted: self.host.fired.get(),
        });
    }

    fn close(&mut self) {
        let Some(open) = self.open.take() else {
            return;
        };
        let destroyed = self.host.destroyed.get();
        unsafe { shard_close(open.handle) };
        assert_eq!(
            self.host.destroyed.get(),
            destroyed + 1,
            "destroy once per close"
        );
        // An unfinished write handle may have written part of a shard (buffered writes
        // nothing before finalize).
        if open.mode >= 2 && !open.finalized {
            self.committed = None;
        }
    }

    /// Note a fault that fired during a call on the open handle.
    fn note_fault(&mut self) {
        if self.host.fired.replace(false) {
            if let Some(o) = self.open.as_mut() {
                o.faulted = true;
            }
        }
    }

    /// Linear index of `coords` when they are in range.
    fn linear(&self, coords: &[u64]) -> Option<usize> {
        let per = self.chunks_per_shard();
        let valid = coords.len() == per.len() && coords.iter().zip(&per).all(|(c, p)| c < p);
        valid.then(|| {
            coords
                .iter()
                .zip(&per)
                .fold(0usize, |a, (c, p)| a * *p as usize + *c as usize)
        })
    }

    fn read(&mut self, input: &mut Cursor) {
        let (coords, rank, linear) = self.coords(input);
        let wrong = input.u8() % 16 == 0;
        let mut buf = vec![0u8; self.nbytes() + wrong as usize];
        let s = unsafe {
            shard_read_chunk(
                self.handle(),
                coords.as_ptr(),
                rank,
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        check("shard_read_chunk", s, READ);
        if s == SHARD_OK {
            assert!(
                !wrong && linear.is_some(),
                "read with bad arguments succeeded"
            );
            self.expect_read(linear, &buf);
        }
        self.note_fault();
    }

    fn read_many(&mut self, input: &mut Cursor) {
        let count = input.u8() as usize % 4;
        let mut all = Vec::new();
        let mut linears = Vec::new();
        let rank = self.cfg.shape.len();
        for _ in 0..count {
            let c = &self.coords(input).0[..rank];
            all.extend_from_slice(c);
            linears.push(self.linear(c));
        }
        let gap = input.u8() as u64 * 4;
        let s = unsafe { shard_set_coalesce_gap(self.handle(), gap) };
        check(
            "shard_set_coalesce_gap",
            s,
            &[SHARD_ERR_NULL_POINTER, SHARD_ERR_INVALID_STATE],
        );
        let n = self.nbytes();
        let mut buf = vec![0u8; n * count];
        let coords = if all.is_empty() {
            std::ptr::null()
        } else {
            all.as_ptr()
        };
        let s = unsafe {
            shard_read_chunks(
                self.handle(),
                coords,
                count,
                rank,
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        check("shard_read_chunks", s, READ);
        if s == SHARD_OK {
            for (k, l) in linears.iter().enumerate() {
                self.expect_read(*l, &buf[k * n..(k + 1) * n]);
            }
        }
        self.note_fault();
    }

    fn read_raw(&mut self, input: &mut Cursor) {
        let (coords, rank, _) = self.coords(input);
        let mut size = usize::MAX;
        let h = self.handle();
        let s = unsafe {
            shard_read_chunk_raw(h, coords.as_ptr(), rank, std::ptr::null_mut(), 0, &mut size)
        };
        check("shard_read_chunk_raw (size)", s, READ_RAW);
        // An index the host tore (a fault mid-write), read without the object's size, may
        // name any length; the library reports it and refuses a read into a buffer that
        // short (a real host's malloc would fail first). Only sizes a chunk can have here
        // are read.
        if s == SHARD_OK && size > 1 << 20 {
            let mut byte = [0u8; 1];
            let s = unsafe {
                shard_read_chunk_raw(h, coords.as_ptr(), rank, byte.as_mut_ptr(), 1, &mut size)
            };
            assert_eq!(s, SHARD_ERR_BUFFER_SIZE, "a 1-byte buffer for a huge chunk");
        } else if s == SHARD_OK {
            let short = input.u8() % 8 == 0 && size > 0;
            let mut buf = vec![0u8; size - short as usize + 1];
            let mut got = usize::MAX;
            let len = buf.len() - 1;
            let s = unsafe {
                shard_read_chunk_raw(h, coords.as_ptr(), rank, buf.as_mut_ptr(), len, &mut got)
            };
            check("shard_read_chunk_raw", s, READ_RAW);
            if short {
                assert_eq!(s, SHARD_ERR_BUFFER_SIZE);
            }
            if s == SHARD_OK {
                assert_eq!(got, size, "raw read size differs from the size query");
            }
        }
        self.note_fault();
    }

    fn info(&mut self, input: &mut Cursor) {
        let (coords, rank, linear) = self.coords(input);
        let mut info = shard_chunk_location {
            offset: 0,
            nbytes: 0,
            empty: false,
        };
        let s = unsafe { shard_chunk_info(self.handle(), coords.as_ptr(), rank, &mut info) };
        check("shard_chunk_info", s, INFO);
        if s == SHARD_OK {
            assert!(linear.is_some());
            assert_eq!(info.empty, info.offset == u64::MAX);
        }
        self.note_fault();
    }

    fn write(&mut self, input: &mut Cursor, raw: bool) {
        let (coords, rank, linear) = self.coords(input);
        let pattern = input.u8();
        let n = self.nbytes();
        let data: Vec<u8> = match pattern {
            0 => self.cfg.fill_bytes.repeat(n / self.cfg.elem),
            _ if raw => input.take(pattern as usize % 64).to_vec(),
            p => (0..n).map(|k| p.wrapping_mul(k as u8 + 1)).collect(),
        };
        let wrong_len = !raw && input.u8() % 16 == 0;
        let len = data.len() - wrong_len as usize;
        let h = self.handle();
        let s = if raw {
            unsafe { shard_write_chunk_raw(h, coords.as_ptr(), rank, data.as_ptr(), len) }
        } else {
            unsafe { shard_write_chunk(h, coords.as_ptr(), rank, data.as_ptr(), len) }
        };
        check("shard_write_chunk", s, WRITE);
        self.written(
            s,
            linear,
            if raw {
                Expect::Unknown
            } else {
                Expect::Data(data)
            },
        );
    }

    fn erase(&mut self, input: &mut Cursor) {
        let (coords, rank, linear) = self.coords(input);
        let s = unsafe { shard_erase_chunk(self.handle(), coords.as_ptr(), rank) };
        check("shard_erase_chunk", s, ERASE);
        self.written(s, linear, Expect::Fill);
    }

    /// Record the outcome of a write call.
    fn written(&mut self, s: shard_status, linear: Option<usize>, what: Expect) {
        self.note_fault();
        let Some(open) = self.open.as_mut() else {
            assert_eq!(s, SHARD_ERR_NULL_POINTER);
            return;
        };
        if s == SHARD_OK {
            assert!(
                !open.finalized && !open.write_failed,
                "a write after the end succeeded"
            );
            if let (Some(w), Some(i)) = (open.working.as_mut(), linear) {
                w[i] = what;
            }
        } else if s == SHARD_ERR_IO && self.host.fired_write.get() {
            open.write_failed = true;
        }
    }

    fn finalize(&mut self, input: &mut Cursor) {
        let mut size = u64::MAX;
        let out = if input.u8() % 4 == 0 {
            std::ptr::null_mut()
        } else {
            &mut size as *mut u64
        };
        let before = self.host.object.borrow().clone();
        let (created, in_place) = (self.host.created.get(), self.host.in_place.get());
        let s = unsafe { shard_finalize(self.handle(), out) };
        check("shard_finalize", s, FINALIZE);
        // A whole object written as a new one: a failure leaves the old object as it was.
        let old_kept = s != SHARD_OK
            && self.host.created.get() > created
            && self.host.in_place.get() == in_place;
        if old_kept {
            assert_eq!(
                *self.host.object.borrow(),
                before,
                "a failed finalize changed the old object"
            );
        }
        self.note_fault();
        let Some(open) = self.open.as_mut() else {
            return;
        };
        if open.mode == 0 {
            assert_eq!(s, SHARD_ERR_INVALID_STATE);
            return;
        }
        if s == SHARD_OK {
            assert!(!open.finalized, "finalized twice");
            assert!(
                !open.write_failed,
                "finalize succeeded after a failed write"
            );
            open.finalized = true;
            let stored = open
                .working
                .as_ref()
                .map(|w| w.iter().any(|e| *e != Expect::Fill));
            self.committed = if open.faulted {
                None
            } else {
                open.working.clone()
            };
            let object = self.host.object.borrow().as_ref().map(Vec::len);
            if !out.is_null() {
                assert_eq!(size, object.unwrap_or(0) as u64, "finalize size");
            }
            if stored == Some(false) && !open.faulted {
                assert_eq!(object, None, "a shard with no chunk was not removed");
            }
        } else if !open.finalized {
            // The object is whatever the failed finalize left: the old one when it wrote a
            // new object and failed before the end, otherwise unknown.
            open.finalized = true;
            if !old_kept {
                self.committed = None;
            }
        }
    }

    /// Arm a fault at the `n`-th callback from now.
    fn plan_fault(&mut self, input: &mut Cursor) {
        let b = input.u8();
        self.host.calls.set(0);
        self.host.fail_at.set(1 + (b % 8) as u32);
        self.host.fault.set(match b >> 6 {
            0 | 1 => Fault::Error,
            2 => Fault::Short,
            _ => Fault::OverReport,
        });
    }
}

/// Build a codec and run the sequence the input spells.
pub fn capi_sequence(data: &[u8]) {
    super::one_thread();
    let mut input = Cursor(data);
    let cfg = &CONFIGS[input.u8() as usize % CONFIGS.len()];
    let mut codec = std::ptr::null_mut();
    let s = unsafe {
        shard_codec_from_config(
            cfg.sharding.as_ptr().cast(),
            cfg.sharding.len(),
            cfg.dtype.as_ptr().cast(),
            cfg.dtype.len(),
            cfg.shape.as_ptr(),
            cfg.shape.len(),
            cfg.fill.as_ptr().cast(),
            cfg.fill.len(),
            &mut codec,
        )
    };
    assert_eq!(s, SHARD_OK, "a valid configuration builds a codec");
    let host = Host {
        object: RefCell::new(None),
        calls: Cell::new(0),
        fail_at: Cell::new(0),
        fault: Cell::new(Fault::Error),
        fired: Cell::new(false),
        fired_write: Cell::new(false),
        destroyed: Cell::new(0),
        pending: RefCell::new(Vec::new()),
        created: Cell::new(0),
        in_place: Cell::new(0),
    };
    let mut seq = Sequence {
        cfg,
        codec,
        host: &host,
        open: None,
        committed: Some(vec![Expect::Fill; 0]),
        opens: 0,
    };
    seq.committed = Some(vec![Expect::Fill; seq.num_chunks()]);
    let mut steps = 0;
    while !input.is_empty() && steps < 64 {
        steps += 1;
        match input.u8() % 11 {
            0 => seq.open(&mut input),
            1 => seq.read(&mut input),
            2 => seq.read_many(&mut input),
            3 => seq.read_raw(&mut input),
            4 => seq.info(&mut input),
            5 => seq.write(&mut input, false),
            6 => seq.write(&mut input, true),
            7 => seq.erase(&mut input),
            8 => seq.finalize(&mut input),
            9 => seq.close(),
            _ => seq.plan_fault(&mut input),
        }
        assert!(
            host.pending.borrow().is_empty(),
            "a new object neither committed nor discarded when the call returned"
        );
    }
    seq.close();
    assert!(
        host.pending.borrow().is_empty(),
        "a new object left at close"
    );
    assert_eq!(
        host.destroyed.get(),
        seq.opens,
        "destroy once per successful open"
    );
    unsafe { shard_codec_free(codec) };
}

/// `shard_codec_from_zarr_json` over arbitrary text: a documented status, and a codec that
/// answers its getters when it succeeds.
pub(crate) fn codec_from_zarr_json(text: &[u8]) {
    use zarrshard::ffi::codec::{shard_codec_index_nbytes, shard_codec_inner_chunk_nbytes};
    let mut codec = std::ptr::null_mut();
    let s = unsafe {
        zarrshard::ffi::codec::shard_codec_from_zarr_json(
            text.as_ptr().cast(),
            text.len(),
            &mut codec,
        )
    };
    check(
        "shard_codec_from_zarr_json",
        s,
        &[
            SHARD_ERR_INVALID_ARGUMENT,
            SHARD_ERR_INVALID_METADATA,
            SHARD_ERR_UNSUPPORTED_CODEC,
        ],
    );
    if s == SHARD_OK {
        let (mut n, mut ix) = (0usize, 0u64);
        assert_eq!(
            unsafe { shard_codec_inner_chunk_nbytes(codec, &mut n) },
            SHARD_OK
        );
        assert_eq!(
            unsafe { shard_codec_index_nbytes(codec, &mut ix) },
            SHARD_OK
        );
        unsafe { shard_codec_free(codec) };
    } else {
        assert!(codec.is_null());
    }
}
