//! The thread pool that encodes and decodes inner chunks in parallel.
//!
//! One rayon pool whose size the host sets with [`set_threads`] (or `ZARRSHARD_THREADS`): 0
//! means one thread per core (the default), 1 means no pool, every chunk encoded or decoded on
//! the calling thread, for hosts that manage their own threads. Work runs the standard rayon
//! ways. Items that start parallel work themselves (whole shards, each decoding or encoding
//! its chunks) go to the pool with `install`, the caller waiting, and nested work is balanced
//! by work stealing (`map_nested`). Items that do not (a shard's inner chunks, a region's
//! chunks) are shared with the calling thread when the call comes from outside the pool: it
//! takes items from the same counter as `threads - 1` tasks spawned into an `in_place_scope`,
//! so a call of a millisecond does not wait for sleeping pool threads to wake before any work
//! is done, and one woken late just takes fewer items (`map`, `map_init`, ...). From a pool
//! thread the same calls are parallel iterators. The library never changes a thread's CPU
//! affinity, yields or spins: placement is the kernel's and the host's. Items are whole inner
//! chunks or larger, never finer, so a task is always worth its scheduling.

use crate::error::{Error, Result};
use rayon::prelude::*;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// The pool built last: calls use it while the setting is above 1; it sleeps while it is 1.
static POOL: RwLock<Option<Arc<rayon::ThreadPool>>> = RwLock::new(None);

/// The setting: the number of threads, 0 until first use. Read without a lock on every call.
static SETTING: AtomicUsize = AtomicUsize::new(0);

/// The most threads [`set_threads`] starts. Each is an OS thread with its own stack and codec
/// contexts, and chunk-level parallelism gains nothing past the cores: a larger count is a
/// mistake (`shard_set_threads((size_t)-1)`), refused before any thread starts, where rayon
/// would try to start 65 535.
pub const MAX_THREADS: usize = 1024;

/// The default size: `ZARRSHARD_THREADS` when set to a positive number (like
/// `RAYON_NUM_THREADS`), otherwise one thread per core; at most [`MAX_THREADS`].
fn cores() -> usize {
    std::env::var("ZARRSHARD_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .min(MAX_THREADS)
}

/// Set the number of threads used to encode and decode inner chunks: 0 = one per core,
/// 1 = the calling thread only. Takes effect for calls that start afterwards; calls in
/// progress finish on the pool they started with. Switching back to the size of the pool built
/// last reuses that pool, whose threads slept meanwhile (keeping their codec contexts), so a
/// host that alternates between one thread and the default starts threads once (unless
/// [`crate::release_memory`] ended them while the setting was 1). A pool of another size
/// replaces it (its threads end once no call uses it). Thread-safe.
///
/// Errors: [`Error::InvalidArgument`] for more than [`MAX_THREADS`] threads, or when the
/// threads cannot be started; the setting is then unchanged.
pub fn set_threads(n: usize) -> Result<()> {
    if n > MAX_THREADS {
        return Err(Error::InvalidArgument(format!(
            "{n} threads: at most {MAX_THREADS} (0 = one per core)"
        )));
    }
    let n = if n == 0 { cores() } else { n };
    let mut pool = POOL.write().unwrap_or_else(|e| e.into_inner());
    let built = pool.as_ref().map(|p| p.current_num_threads());
    if n > 1 && built != Some(n) {
        *pool = Some(Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("zarrshard-{i}"))
                .build()
                .map_err(|e| Error::InvalidArgument(format!("cannot start {n} threads: {e}")))?,
        ));
    }
    SETTING.store(n, Ordering::Release);
    Ok(())
}

/// The number of threads encoding and decoding uses. Lock-free.
pub fn threads() -> usize {
    match SETTING.load(Ordering::Acquire) {
        0 => {
            // First use: the default. A failure to start threads falls back to the calling
            // thread alone.
            if set_threads(0).is_err() {
                SETTING.store(1, Ordering::Release);
            }
            SETTING.load(Ordering::Acquire)
        }
        n => n,
    }
}

/// `f()` once on each thread of the pool built last (also while the setting is 1 and the pool
/// sleeps), the calling thread waiting until all have run it; nothing without a pool. For
/// per-thread state ([`crate::release_memory`]): a thread busy with an item runs `f` after it.
pub(crate) fn on_each_pool_thread<T: Send>(f: impl Fn() -> T + Sync) -> Vec<T> {
    // Not under the lock while waiting: `set_threads` elsewhere need not wait for the pool.
    let pool = POOL.read().unwrap_or_else(|e| e.into_inner()).clone();
    pool.map_or_else(Vec::new, |pool| pool.broadcast(|_| f()))
}

/// While the setting is 1, drop the pool built last, whose threads only sleep then (they end
/// once no call in progress uses them); a later setting above 1 starts new ones.
pub(crate) fn end_sleeping_pool() {
    let mut pool = POOL.write().unwrap_or_else(|e| e.into_inner());
    if SETTING.load(Ordering::Acquire) == 1 {
        *pool = None;
    }
}

/// The pool a call of `n` items uses: none with one item or a setting of 1.
fn pool_for(n: usize) -> Option<Arc<rayon::ThreadPool>> {
    if n < 2 || threads() < 2 {
        return None;
    }
    POOL.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// True when the calling thread is one of the library's pool threads (inside an item).
#[cfg(test)]
fn on_pool_thread() -> bool {
    let pool = POOL.read().unwrap_or_else(|e| e.into_inner());
    pool.as_ref()
        .is_some_and(|p| p.current_thread_index().is_some())
}

/// True when [`map`] or [`map_init`] of `n` items called here would share them between this
/// thread and pool tasks (not: one thread, one item, a call from a pool thread or from inside
/// a shared item). A shard written as it encodes (`crate::shard::streamed`) needs that: its
/// writes overlap the encoding only while other threads go on encoding, and shards encoded
/// side by side on the pool already overlap one's write with another's encode.
pub(crate) fn shares_with_caller(n: usize) -> bool {
    matches!(how(n), How::Shared(..))
}

/// `f(0..n)` in parallel, results in order, for items that start no parallel work of their
/// own (see the module docs); on the calling thread alone when the setting is 1 or there is
/// one item. On a failure no item after it starts and the lowest failed item's error is
/// returned, on every path (the same error every run).
pub(crate) fn map<T: Send>(
    n: usize,
    f: impl Fn(usize) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    map_init(n, || (), |_, i| f(i))
}

/// [`map`] where each thread taking part runs its items with a state of its own, made by
/// `init` and dropped before this returns: `f(state, i)`. A state sees its items in increasing
/// order. For per-thread scratch and output memory.
pub(crate) fn map_init<S: Send, T: Send>(
    n: usize,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    match how(n) {
        How::Here => {
            let mut state = init();
            (0..n).map(|i| f(&mut state, i)).collect()
        }
        How::Stealing(pool) => {
            pool.install(|| stealing((0..n).into_par_iter(), init, |s, i, _| f(s, i)))
        }
        How::Shared(pool, helpers) => {
            let mut done = share(&pool, helpers, n, init, f)?;
            done.sort_unstable_by_key(|(i, _)| *i);
            Ok(done.into_iter().map(|(_, v)| v).collect())
        }
    }
}

/// `f(0..n)` on the pool, results in order, the calling thread waiting (rayon's `install`):
/// for items that start parallel work themselves, which idle threads then steal. On the
/// calling thread when the setting is 1 or there is one item. The error rule of [`map`].
pub(crate) fn map_nested<T: Send>(
    n: usize,
    f: impl Fn(usize) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    match pool_for(n) {
        Some(pool) if !SHARING.get() => {
            pool.install(|| stealing((0..n).into_par_iter(), || (), |_, i, _| f(i)))
        }
        _ => (0..n).map(f).collect(),
    }
}

/// `f(state, i)` for `i` in `0..n` in parallel like [`map_init`], keeping no result: for many
/// small items (a region read's inner chunks), whose results would cost memory per item.
pub(crate) fn for_each_init<S: Send>(
    n: usize,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize) -> Result<()> + Sync + Send,
) -> Result<()> {
    match how(n) {
        How::Here => {
            let mut state = init();
            (0..n).try_for_each(|i| f(&mut state, i))
        }
        How::Stealing(pool) => pool.install(|| {
            let states: Vec<Mutex<S>> = (0..rayon::current_num_threads())
                .map(|_| Mutex::new(init()))
                .collect();
            let lowest = AtomicUsize::new(usize::MAX);
            let error: Mutex<Option<(usize, Error)>> = Mutex::new(None);
            (0..n).into_par_iter().for_each(|i| {
                if i > lowest.load(Ordering::Relaxed) {
                    return;
                }
                let mine = rayon::current_thread_index()
                    .and_then(|t| states.get(t))
                    .and_then(|s| s.try_lock().ok());
                let r = match mine {
                    Some(mut state) => f(&mut state, i),
                    None => f(&mut init(), i),
                };
                if let Err(e) = r {
                    let mut first = error.lock().unwrap_or_else(|e| e.into_inner());
                    if first.as_ref().is_none_or(|(j, _)| i < *j) {
                        *first = Some((i, e));
                    }
                    lowest.fetch_min(i, Ordering::Relaxed);
                }
            });
            match error.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some((_, e)) => Err(e),
                None => Ok(()),
            }
        }),
        How::Shared(pool, helpers) => share(&pool, helpers, n, init, f).map(drop),
    }
}

/// How a call of `n` items that start no parallel work runs.
enum How {
    /// On the calling thread: no pool, one item, or a call from inside a shared item.
    Here,
    /// With rayon's work stealing: the calling thread is one of the pool's.
    Stealing(Arc<rayon::ThreadPool>),
    /// Shared between the calling thread and this many tasks on the pool.
    Shared(Arc<rayon::ThreadPool>, usize),
}

thread_local! {
    /// Set while this thread (outside the pool) runs items of a shared call: a call made from
    /// inside one runs on this thread, since tasks it spawned could wait behind long items.
    static SHARING: Cell<bool> = const { Cell::new(false) };
}

fn how(n: usize) -> How {
    match pool_for(n) {
        None => How::Here,
        // Our pool's own thread (not another rayon pool's: a host's thread is a caller).
        Some(pool) if pool.current_thread_index().is_some() => How::Stealing(pool),
        Some(_) if SHARING.get() => How::Here,
        Some(pool) => How::Shared(pool, (threads() - 1).min(n - 1)),
    }
}

/// Clears [`SHARING`] when the calling thread's share of the items ends, panic or not.
struct Sharing;

impl Drop for Sharing {
    fn drop(&mut self) {
        SHARING.set(false);
    }
}

/// `f(state, i)` for `i` in `0..n`, taken in order from one counter by the calling thread and
/// `helpers` tasks spawned on `pool` (rayon's `in_place_scope`), until the items run out or one
/// fails (then no further item starts). Returns the results with their positions, in no
/// particular order, or the error of the lowest position that failed.
fn share<S, T: Send>(
    pool: &rayon::ThreadPool,
    helpers: usize,
    n: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) -> Result<T> + Sync,
) -> Result<Vec<(usize, T)>> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let parts = Mutex::new(Vec::with_capacity(helpers + 1));
    let work = || {
        let (mut done, mut error) = (Vec::new(), None);
        let mut state = init();
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            match f(&mut state, i) {
                Ok(v) => done.push((i, v)),
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    error = Some((i, e));
                    break;
                }
            }
        }
        drop(state);
        let mut parts = parts.lock().unwrap_or_else(|e| e.into_inner());
        parts.push((done, error));
    };
    pool.in_place_scope(|scope| {
        for _ in 0..helpers {
            scope.spawn(|_| work());
        }
        SHARING.set(true);
        let _sharing = Sharing;
        work();
    });
    let mut results = Vec::new();
    let mut first_error: Option<(usize, Error)> = None;
    for (done, error) in parts.into_inner().unwrap_or_else(|e| e.into_inner()) {
        results.extend(done);
        if let Some((i, e)) = error {
            if first_error.as_ref().is_none_or(|(j, _)| i < *j) {
                first_error = Some((i, e));
            }
        }
    }
    match first_error {
        Some((_, e)) => Err(e),
        None => Ok(results),
    }
}

/// `f(i, item)` for each item by rayon's work stealing, with the error rule of one thread: on a
/// failure no item *after* it starts, every item before it still runs, and the lowest failed
/// position's error is returned. So a shard with two damaged chunks reports the same one every
/// time. (Collecting into rayon's `Result` returns whichever error some thread saw first,
/// which changes from run to run.) Results in order.
fn stealing<I, S: Send, T>(
    items: I,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize, I::Item) -> Result<T> + Sync + Send,
) -> Result<Vec<T>>
where
    I: IndexedParallelIterator,
    T: Send,
{
    // One state per pool thread for the whole call (rayon's `map_init` makes one per split
    // job: dozens). A thread that reaches an item of this call again while running one (from
    // work stealing inside a nested parallel call) gets a state of its own for that item.
    let states: Vec<Mutex<S>> = (0..rayon::current_num_threads())
        .map(|_| Mutex::new(init()))
        .collect();
    let lowest = AtomicUsize::new(usize::MAX);
    let ran: Vec<Option<Result<T>>> = items
        .enumerate()
        .map(|(i, item)| {
            // Only a failure before this item skips it; `lowest` only falls, so no item
            // before the final lowest failure is ever skipped.
            if i > lowest.load(Ordering::Relaxed) {
                return None;
            }
            let mine = rayon::current_thread_index()
                .and_then(|t| states.get(t))
                .and_then(|s| s.try_lock().ok());
            let r = match mine {
                Some(mut state) => f(&mut state, i, item),
                None => f(&mut init(), i, item),
            };
            if r.is_err() {
                lowest.fetch_min(i, Ordering::Relaxed);
            }
            Some(r)
        })
        .collect();
    drop(states);
    let lowest = lowest.into_inner();
    let mut out = Vec::with_capacity(ran.len());
    for (i, r) in ran.into_iter().enumerate() {
        match r {
            Some(Ok(v)) if i < lowest => out.push(v),
            Some(Err(e)) if i == lowest => return Err(e),
            _ => {}
        }
    }
    Ok(out)
}

/// Run `background` on the pool while `foreground` runs on the calling thread (which need not
/// be `Send`: it may hold the caller's reader); returns both results once both are done
/// (rayon's `in_place_scope`). Without a pool, `background` runs first, then `foreground`.
pub(crate) fn overlap<A: Send, B>(
    background: impl FnOnce() -> A + Send,
    foreground: impl FnOnce() -> B,
) -> (A, B) {
    match pool_for(2) {
        Some(pool) => {
            let mut a = None;
            let b = pool.in_place_scope(|scope| {
                scope.spawn(|_| a = Some(background()));
                foreground()
            });
            (a.expect("the scope waits for its task"), b)
        }
        None => {
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
    let pieces: Vec<Mutex<&mut [u8]>> = buf.chunks_mut(size).map(Mutex::new).collect();
    // Each piece is locked once, by the one item that owns it: never contended.
    for_each_init(
        pieces.len(),
        || (),
        |_, i| {
            let mut piece = pieces[i].lock().unwrap_or_else(|e| e.into_inner());
            f(i, &mut piece)
        },
    )
}

/// Held by unit tests that change the thread setting, which is process-wide.
#[cfg(test)]
pub(crate) static TEST_SETTING: Mutex<()> = Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Condvar, Mutex};
    use std::thread::ThreadId;
    use std::time::Duration;

    /// Both items must run at the same time on two threads (each waits for the other, giving
    /// up after 10 s so a regression fails rather than hangs); returns the threads that ran
    /// them.
    fn two_items_at_once() -> Vec<ThreadId> {
        let arrived = (Mutex::new(0usize), Condvar::new());
        map(2, |_| {
            let (count, cv) = &arrived;
            let mut n = count.lock().unwrap();
            *n += 1;
            cv.notify_all();
            let (n, timeout) = cv
                .wait_timeout_while(n, Duration::from_secs(10), |n| *n < 2)
                .unwrap();
            drop(n);
            match timeout.timed_out() {
                true => Err(Error::InvalidArgument(
                    "the items did not run together".into(),
                )),
                false => Ok(std::thread::current().id()),
            }
        })
        .unwrap()
    }

    fn built() -> Option<Arc<rayon::ThreadPool>> {
        POOL.read().unwrap().clone()
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn calls_share_or_use_the_pool_in_order_with_the_lowest_error() {
        let _setting = TEST_SETTING.lock().unwrap_or_else(|e| e.into_inner());
        set_threads(2).unwrap();
        let me = std::thread::current().id();
        // Two items at once: the calling thread takes one, a pool task the other.
        let ran = two_items_at_once();
        assert!(ran.contains(&me), "the calling thread took no item");
        assert_ne!(ran[0], ran[1]);
        assert!(!on_pool_thread() && shares_with_caller(2) && !shares_with_caller(1));
        // Items that start parallel work go to the pool with `install`: the caller waits.
        let on_pool = map_nested(2, |_| Ok(std::thread::current().id())).unwrap();
        assert!(!on_pool.contains(&me));

        // In order, whoever ran them.
        let squares = map(1000, |i| Ok(i * i)).unwrap();
        assert_eq!(squares, (0..1000).map(|i| i * i).collect::<Vec<_>>());

        // Pieces: each written once, by index.
        let mut buf = vec![0u8; 10 * 7 + 3];
        for_each_piece(&mut buf, 7, |i, p| {
            p.fill(i as u8 + 1);
            Ok(())
        })
        .unwrap();
        let want: Vec<u8> = (0..buf.len()).map(|k| (k / 7) as u8 + 1).collect();
        assert_eq!(buf, want);

        // The lowest failing item's error, whichever thread saw a failure first: item 3 fails
        // last, after items far behind it failed at once. With rayon's `Result` collection it
        // was whichever failure came first in time (item 80 here, almost always).
        let slow_low = |i: usize| -> Result<usize> {
            match i {
                3 => {
                    std::thread::sleep(Duration::from_millis(20));
                    Err(Error::InvalidArgument(format!("item {i}")))
                }
                80 | 999 => Err(Error::InvalidArgument(format!("item {i}"))),
                _ => Ok(i),
            }
        };
        let item_3 = Error::InvalidArgument("item 3".into()).to_string();
        for _ in 0..5 {
            assert_eq!(map(1000, slow_low).unwrap_err().to_string(), item_3);
            let nested = map_nested(2, |_| map(1000, slow_low));
            assert_eq!(nested.unwrap_err().to_string(), item_3);
            let nested = map(2, |_| map(1000, slow_low));
            assert_eq!(nested.unwrap_err().to_string(), item_3);
            let mut buf = vec![0u8; 64];
            let e = for_each_piece(&mut buf, 8, |i, _| slow_low(i).map(drop)).unwrap_err();
            assert_eq!(e.to_string(), item_3);
        }
        // Every item before the lowest failure ran; results stay in order on success, nested
        // calls included (their items are stolen by whichever thread is idle).
        let ran = AtomicUsize::new(0);
        let _ = map(100, |i| {
            ran.fetch_add(1, Ordering::Relaxed);
            slow_low(i)
        });
        assert!(ran.load(Ordering::Relaxed) >= 4);
        let nested = map_nested(64, |i| {
            assert!(on_pool_thread() && !shares_with_caller(16));
            map(16, |j| Ok(i * 16 + j))
        })
        .unwrap();
        assert_eq!(nested.concat(), (0..1024).collect::<Vec<_>>());
        // A call nested in an item the calling thread runs stays on that thread; one nested in
        // a pool task's item uses the pool. Both finish with the right results.
        let nested = map(64, |i| {
            let outer = std::thread::current().id();
            let inner = map(16, |j| Ok((std::thread::current().id(), i * 16 + j)))?;
            if outer == me && inner.iter().any(|(t, _)| *t != me) {
                return Err(Error::InvalidArgument("nested call left the thread".into()));
            }
            Ok(inner.into_iter().map(|(_, v)| v).collect::<Vec<_>>())
        })
        .unwrap();
        assert_eq!(nested.concat(), (0..1024).collect::<Vec<_>>());
        assert!(!SHARING.get());

        // A panicking item reaches the caller and poisons nothing.
        let caught = std::panic::catch_unwind(|| {
            map(8, |i| match i {
                3 => panic!("item 3"),
                _ => Ok(i),
            })
        });
        assert!(caught.is_err());
        assert!(!SHARING.get(), "the thread can share again");
        assert!(two_items_at_once().contains(&me));

        // `overlap`: the background on the pool, the foreground here.
        let (a, b) = overlap(
            || std::thread::current().id(),
            || std::thread::current().id(),
        );
        assert!(a != me && b == me);

        // One thread: everything on the calling thread.
        let two = built().expect("a pool of 2");
        set_threads(1).unwrap();
        assert_eq!(threads(), 1);
        assert_eq!(
            map(5, |_| Ok(std::thread::current().id())).unwrap(),
            vec![me; 5]
        );
        assert!(!shares_with_caller(5));
        // Back to 2: the same pool, not new threads.
        set_threads(2).unwrap();
        assert!(Arc::ptr_eq(&two, &built().unwrap()));
        // Another size: a new pool.
        set_threads(3).unwrap();
        assert!(!Arc::ptr_eq(&two, &built().unwrap()));
        assert_eq!(built().unwrap().current_num_threads(), 3);
        // Too many: refused, the setting unchanged.
        let e = set_threads(MAX_THREADS + 1).unwrap_err();
        assert!(e.to_string().contains("at most 1024"), "{e}");
        assert_eq!(threads(), 3);
        set_threads(0).unwrap();
    }
}
