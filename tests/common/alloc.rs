//! A counting global allocator, for tests (and the benchmark, bench/benches/compare.rs) that
//! measure peak heap use. A binary installs
//! it with `#[global_allocator] static ALLOC: Counting = Counting;` and measures with
//! [`peak_during`], or counts large allocations with [`large_during`] (serialise the
//! measurements: tests run on threads).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Allocations (and reallocations) of [`LARGE`] bytes or more.
static LARGE_COUNT: AtomicUsize = AtomicUsize::new(0);

/// What [`large_during`] counts: an allocation of this many bytes or more.
pub const LARGE: usize = 64 << 10;

fn grew(n: usize) {
    let now = CURRENT.fetch_add(n, Ordering::SeqCst) + n;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

fn sized(n: usize) {
    if n >= LARGE {
        LARGE_COUNT.fetch_add(1, Ordering::SeqCst);
    }
}

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size());
            sized(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            grew(l.size());
            sized(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        CURRENT.fetch_sub(l.size(), Ordering::SeqCst);
    }
    // In place where the system can: counting it as alloc + dealloc would report a peak of
    // old + new size that never happened.
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            sized(new);
            if new >= l.size() {
                grew(new - l.size());
            } else {
                CURRENT.fetch_sub(l.size() - new, Ordering::SeqCst);
            }
        }
        q
    }
}

/// `f`'s result and the peak bytes allocated above the level at its start while it ran.
#[allow(dead_code)] // not every binary that includes this module measures peaks
pub fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let out = f();
    (out, PEAK.load(Ordering::SeqCst).saturating_sub(base))
}

/// `f`'s result and how many allocations of [`LARGE`] bytes or more it made (reallocations
/// to that size included).
#[allow(dead_code)] // not every binary that includes this module counts them
pub fn large_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LARGE_COUNT.load(Ordering::SeqCst);
    let out = f();
    (out, LARGE_COUNT.load(Ordering::SeqCst) - before)
}

/// The bytes allocated and not yet freed now.
#[allow(dead_code)] // not every binary that includes this module reads it
pub fn live() -> usize {
    CURRENT.load(Ordering::SeqCst)
}
