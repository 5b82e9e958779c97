//! The thread pool that encodes and decodes inner chunks in parallel.
//!
//! One process-wide pool whose size the host sets with [`set_threads`] (or the environment
//! variable `ZARRSHARD_THREADS`): 0 means one thread per core (the default), 1 means no pool —
//! every chunk is encoded or decoded on the calling thread, for hosts that manage their own
//! threads. Work is split by whole inner chunks (or rows of them), never finer, so a task is
//! always worth its scheduling.

use crate::error::{Error, Result};
use rayon::prelude::*;
use std::sync::{Arc, RwLock};

/// `None` until first use or after `set_threads` (rebuilt lazily).
static POOL: RwLock<Option<(usize, Option<Arc<rayon::ThreadPool>>)>> = RwLock::new(None);

/// The default size: `ZARRSHARD_THREADS` when set to a positive number (like
/// `RAYON_NUM_THREADS`), otherwise one thread per core.
fn cores() -> usize {
    std::env::var("ZARRSHARD_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Set the number of threads used to encode and decode inner chunks: 0 = one per core,
/// 1 = the calling thread only. Takes effect for calls that start afterwards.
pub fn set_threads(n: usize) -> Result<()> {
    let n = if n == 0 { cores() } else { n };
    let pool = if n == 1 {
        None
    } else {
        Some(Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("zarrshard-{i}"))
                .build()
                .map_err(|e| Error::InvalidArgument(format!("cannot start {n} threads: {e}")))?,
        ))
    };
    *POOL.write().unwrap_or_else(|e| e.into_inner()) = Some((n, pool));
    Ok(())
}

/// The number of threads encoding and decoding uses.
pub fn threads() -> usize {
    pool().0
}

fn pool() -> (usize, Option<Arc<rayon::ThreadPool>>) {
    if let Some(p) = POOL.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return p.clone();
    }
    // First use: the default. A failure to start threads falls back to the calling thread.
    if set_threads(0).is_err() {
        *POOL.write().unwrap_or_else(|e| e.into_inner()) = Some((1, None));
    }
    pool()
}

/// `f(0..n)` on the pool (in order of the results), or on the calling thread when the pool
/// has one thread or there is only one item.
pub(crate) fn map<T: Send>(
    n: usize,
    f: impl Fn(usize) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    match pool() {
        (_, Some(pool)) if n > 1 => pool.install(|| (0..n).into_par_iter().map(&f).collect()),
        _ => (0..n).map(f).collect(),
    }
}

/// Run `background` on the pool while `foreground` runs on the calling thread (which need not
/// be `Send`: it may hold the caller's reader); returns both results once both are done.
/// Without a pool, `background` runs first, then `foreground`.
pub(crate) fn overlap<A: Send, B>(
    background: impl FnOnce() -> A + Send,
    foreground: impl FnOnce() -> B,
) -> (A, B) {
    match pool() {
        (_, Some(pool)) => {
            let mut a = None;
            let b = pool.in_place_scope(|scope| {
                scope.spawn(|_| a = Some(background()));
                foreground()
            });
            (a.expect("the scope waits for its task"), b)
        }
        _ => {
            let a = background();
            (a, foreground())
        }
    }
}

/// `f(i, piece)` for each `size`-byte piece of `buf`, in parallel like [`map`].
pub(crate) fn for_each_piece(
    buf: &mut [u8],
    size: usize,
    f: impl Fn(usize, &mut [u8]) -> Result<()> + Sync + Send,
) -> Result<()> {
    match pool() {
        (_, Some(pool)) if buf.len() > size => pool.install(|| {
            buf.par_chunks_mut(size)
                .enumerate()
                .try_for_each(|(i, p)| f(i, p))
        }),
        _ => buf
            .chunks_mut(size)
            .enumerate()
            .try_for_each(|(i, p)| f(i, p)),
    }
}

/// `f(i, piece)` for consecutive pieces of `buf` of the given `sizes` (which must add up to at
/// most `buf.len()`), in parallel like [`map`].
pub(crate) fn for_each_split(
    buf: &mut [u8],
    sizes: &[usize],
    f: impl Fn(usize, &mut [u8]) -> Result<()> + Sync + Send,
) -> Result<()> {
    let mut pieces = Vec::with_capacity(sizes.len());
    let mut rest = buf;
    for &n in sizes {
        let (piece, tail) = rest.split_at_mut(n);
        pieces.push(piece);
        rest = tail;
    }
    match pool() {
        (_, Some(pool)) if pieces.len() > 1 => pool.install(|| {
            pieces
                .into_par_iter()
                .enumerate()
                .try_for_each(|(i, p)| f(i, p))
        }),
        _ => pieces
            .into_iter()
            .enumerate()
            .try_for_each(|(i, p)| f(i, p)),
    }
}
