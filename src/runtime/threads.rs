//! The thread pool that encodes and decodes inner chunks in parallel.
//!
//! One process-wide pool whose size the host sets with [`set_threads`] (or the environment
//! variable `ZARRSHARD_THREADS`): 0 means one thread per core (the default), 1 means no pool —
//! every chunk is encoded or decoded on the calling thread, for hosts that manage their own
//! threads. Work is split by whole inner chunks (or rows of them), never finer, so a task is
//! always worth its scheduling.
//!
//! Two kinds of parallel call:
//! * a shard's inner chunks (encoded, or decoded a row of chunks per item) and the bands of
//!   rows a region read decodes into are *shared with the calling thread* (`map`,
//!   `for_each_piece`, `for_each_split`): it takes items from the same queue as
//!   `threads - 1` pool tasks, one at a time, so a pool thread that wakes late just takes
//!   fewer;
//! * whole shards (each encoding or decoding its chunks in parallel) and a region read's
//!   fetches go to the pool and the calling thread waits (`map_on_pool`): work nested inside
//!   an item is balanced between pool threads by stealing, which a thread outside the pool
//!   cannot do; and a region's fetched bytes, allocated on pool threads, come from their
//!   allocator arenas, which glibc does not trim between calls. Shared, the calling thread
//!   fetched part of each row into glibc's main arena, which it trims when they are freed:
//!   1 000–4 600 page faults per whole-array read, 10–30 % slower
//!   (`bench/examples/profile.rs decode`). Decoding the bands allocates no such buffers; it
//!   went to the pool too until handing over proved slow after idleness (below).
//!
//! Why the calling thread works rather than waits (unlike rayon's `install`, which zarrs and
//! most Rust code use): on the 2-vCPU machine of `BENCHMARKS.md`, when a thread that has just
//! been busy hands every item to sleeping pool threads and goes to sleep, the kernel often
//! queues both woken pool threads on one vCPU while the other stays idle for milliseconds.
//! After 10 ms of work on the calling thread (`bench/examples/profile.rs`, `SPIN=10`), one
//! shard decoded and one shard encoded ran on one core in 16 and 21 of 30 calls handed over
//! (medians 2.3 and 5.1 ms), in 0 of 30 shared (1.5 and 3.0 ms): the calling thread keeps its
//! vCPU and the one woken task gets the other.
//!
//! Waking the pool task right is the other half. After a few milliseconds of idleness, Linux
//! often queues the woken task on the caller's own CPU while the other idles, and the two take
//! turns there until the scheduler balances, most of a call of a few milliseconds (the
//! private `placement` module says why). So a shared call notes which CPU each of its threads
//! runs on; a pool task that starts on a CPU another thread of the call was seen on moves itself
//! off it, and the calling thread yields once right after waking the tasks, so that one queued
//! behind it starts at once and moves. The host's thread is never moved. Measured with
//! `bench/examples/profile.rs` and `SLEEP=20` (20 ms idle before each call): one shard decoded
//! 2.8 → 1.8–2.0 ms (1.0 → 1.7 cores busy), one shard written 5.8–6.3 → 3.3–3.8 ms; calls
//! back to back no slower.
//!
//! Calls from a pool thread (inside an item of `map_on_pool`, or of a helper task) use
//! rayon's own work stealing; calls made by the calling thread while it runs a shared item
//! (a nested sharding codec) run on that thread, since pool tasks it spawned then might wait
//! behind other long items.

use crate::error::{Error, Result};
use crate::runtime::placement;
use rayon::prelude::*;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// The setting: the number of threads (`None` until first use), and the pool built last,
/// which calls use while the setting is above 1 and which stays asleep while it is 1.
static POOL: RwLock<(Option<usize>, Option<Arc<rayon::ThreadPool>>)> = RwLock::new((None, None));

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
/// 1 = the calling thread only; the calling thread counts as one of them (see the module
/// docs). On Linux a pool thread that finds itself queued on the CPU of the call's other
/// thread moves off it by narrowing its own CPU affinity and restoring it at once; the
/// affinity of the host's threads is never changed. Takes effect for calls that start afterwards. Switching back to the size of the pool
/// built last reuses that pool, whose threads have slept since (keeping their codec contexts):
/// a host that alternates between one thread and the default starts threads once (unless
/// [`crate::release_memory`] ended them while the setting was 1). A pool of another size
/// replaces it (its threads end once no call uses it).
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
    let mut setting = POOL.write().unwrap_or_else(|e| e.into_inner());
    let built = setting.1.as_ref().map(|p| p.current_num_threads());
    if n > 1 && built != Some(n) {
        setting.1 = Some(Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("zarrshard-{i}"))
                .build()
                .map_err(|e| Error::InvalidArgument(format!("cannot start {n} threads: {e}")))?,
        ));
    }
    setting.0 = Some(n);
    Ok(())
}

/// The number of threads encoding and decoding uses.
pub fn threads() -> usize {
    pool().0
}

/// `f()` once on each thread of the pool built last (also while the setting is 1 and the pool
/// sleeps), the calling thread waiting until all have run it; nothing without a pool. For
/// per-thread state ([`crate::release_memory`]): a thread busy with an item runs `f` after it.
pub(crate) fn on_each_pool_thread<T: Send>(f: impl Fn() -> T + Sync) -> Vec<T> {
    // Not under the lock while waiting: `set_threads` elsewhere need not wait for the pool.
    let pool = POOL.read().unwrap_or_else(|e| e.into_inner()).1.clone();
    pool.map_or_else(Vec::new, |pool| pool.broadcast(|_| f()))
}

/// While the setting is 1, drop the pool built last, whose threads only sleep then (they end
/// once no call in progress uses them); a later setting above 1 starts new ones.
pub(crate) fn end_sleeping_pool() {
    let mut setting = POOL.write().unwrap_or_else(|e| e.into_inner());
    if setting.0 == Some(1) {
        setting.1 = None;
    }
}

/// The number of threads and, when above 1, the pool.
fn pool() -> (usize, Option<Arc<rayon::ThreadPool>>) {
    if let (Some(n), pool) = &*POOL.read().unwrap_or_else(|e| e.into_inner()) {
        return (*n, pool.clone().filter(|_| *n > 1));
    }
    // First use: the default. A failure to start threads falls back to the calling thread.
    if set_threads(0).is_err() {
        POOL.write().unwrap_or_else(|e| e.into_inner()).0 = Some(1);
    }
    pool()
}

/// `f(0..n)` in order of the results, shared between the calling thread and the pool (see
/// the module docs); on the calling thread alone when the pool has one thread or there is
/// only one item. Items must not start parallel work of their own: use [`map_on_pool`]. On a
/// failure no item after it starts and the lowest failed item's error is returned, on every
/// path (the same error every run).
pub(crate) fn map<T: Send>(
    n: usize,
    f: impl Fn(usize) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    map_init(n, || (), |_, i| f(i))
}

/// [`map`] where each thread taking part runs its items with a state of its own, made by
/// `init` (on the pool path, one per pool thread, made up front) and dropped before this
/// returns: `f(state, i)`. A state sees its items in increasing order. For per-thread output
/// memory ([`crate::shard::encoded`]).
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
        How::Pool(pool) => {
            pool.install(|| stealing((0..n).into_par_iter(), init, |s, i, _| f(s, i)))
        }
        How::Shared(pool, helpers) => {
            let mut done = share(&pool, helpers, 0..n, init, |s, i, _| f(s, i))?;
            done.sort_unstable_by_key(|(i, _)| *i);
            Ok(done.into_iter().map(|(_, v)| v).collect())
        }
    }
}

/// True when [`map`] or [`map_init`] of `n` items called here would share them between this
/// thread and pool tasks (not: one thread, one item, or a call from a pool thread or from
/// inside a shared item). A shard written as it encodes (`crate::shard::streamed`) needs that: its
/// writes overlap the encoding only when another thread goes on encoding meanwhile, and
/// shards encoded side by side on the pool already overlap one's write with another's encode.
pub(crate) fn shares_with_pool(n: usize) -> bool {
    matches!(how(n), How::Shared(..))
}

/// `f(0..n)` on the pool, in order of the results, the calling thread waiting; for items that
/// start parallel work themselves (see the module docs). On the calling thread when the pool
/// has one thread or there is only one item. On a failure, the lowest failed item's error
/// (see [`stealing`]).
pub(crate) fn map_on_pool<T: Send>(
    n: usize,
    f: impl Fn(usize) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    match pool() {
        (_, Some(pool)) if n > 1 => {
            pool.install(|| stealing((0..n).into_par_iter(), || (), |_, i, _| f(i)))
        }
        _ => (0..n).map(f).collect(),
    }
}

/// `f(i, item)` for each item by rayon's work stealing, with the error rule of one thread and
/// of [`share`]: on a failure no item *after* it starts, every item before it still runs, and
/// the lowest failed position's error is returned. So a shard with two damaged chunks reports
/// the same one every time. (Collecting into rayon's `Result` returns whichever error some
/// thread saw first, which changed from run to run.) Results in order.
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

/// How a call of `n` items that start no parallel work runs.
enum How {
    /// On the calling thread: no pool, one item, or a nested call while sharing.
    Here,
    /// With rayon's work stealing: the calling thread is one of the pool's.
    Pool(Arc<rayon::ThreadPool>),
    /// Shared between the calling thread and this many pool tasks.
    Shared(Arc<rayon::ThreadPool>, usize),
}

thread_local! {
    /// Set while this (non-pool) thread runs items of a shared call.
    static SHARING: Cell<bool> = const { Cell::new(false) };
}

fn how(n: usize) -> How {
    match pool() {
        (threads, Some(pool)) if n > 1 => {
            if pool.current_thread_index().is_some() {
                How::Pool(pool)
            } else if SHARING.get() {
                How::Here
            } else {
                How::Shared(pool, (threads - 1).min(n - 1))
            }
        }
        _ => How::Here,
    }
}

/// Clears [`SHARING`] when the calling thread's share of the items ends, panic or not.
struct Sharing;

impl Sharing {
    fn enter() -> Sharing {
        SHARING.set(true);
        Sharing
    }
}

impl Drop for Sharing {
    fn drop(&mut self) {
        SHARING.set(false);
    }
}

/// `f(i, item)` for each item, taken one at a time from one queue by the calling thread and
/// `helpers` tasks on `pool` until it runs out or an item fails (then no further item starts);
/// returns the results with their positions, in no particular order, or the error of the
/// lowest position that failed. A task that starts after the queue ran out returns at once.
fn share<I, S, T>(
    pool: &rayon::ThreadPool,
    helpers: usize,
    items: I,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, I::Item) -> Result<T> + Sync,
) -> Result<Vec<(usize, T)>>
where
    I: Iterator + Send,
    T: Send,
{
    let queue = Mutex::new(items.enumerate());
    let failed = AtomicBool::new(false);
    let parts = Mutex::new(Vec::with_capacity(helpers + 1));
    let seats = Seats::new(helpers + 1);
    // `me`: 0 for the calling thread, 1..=helpers for the pool tasks.
    let work = |me: usize| {
        let (mut done, mut error) = (Vec::new(), None);
        if me > 0 {
            seats.arrive(me);
        }
        let mut state = init();
        while !failed.load(Ordering::Relaxed) {
            seats.note(me);
            // The lock is released before the item runs.
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((i, item)) = next else { break };
            match f(&mut state, i, item) {
                Ok(v) => done.push((i, v)),
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    error = Some((i, e));
                    break;
                }
            }
        }
        drop(state);
        parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((done, error));
    };
    // Noted before the tasks wake, so that one the kernel queues on this CPU sees it.
    seats.note(0);
    pool.in_place_scope(|scope| {
        for me in 1..=helpers {
            let work = &work;
            scope.spawn(move |_| work(me));
        }
        seats.make_way();
        let _sharing = Sharing::enter();
        work(0);
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

/// Where the threads of one shared call were last seen running, so that a pool task the kernel
/// queued on the CPU of another (the caller, usually) moves to a free one when it starts
/// ([`crate::runtime::placement`] says why). Seat 0 is the calling thread's.
struct Seats {
    /// Each thread's CPU when last noted; [`Seats::UNKNOWN`] before it starts (or where the
    /// platform does not say).
    cpus: Vec<AtomicUsize>,
}

impl Seats {
    const UNKNOWN: usize = usize::MAX;

    fn new(n: usize) -> Seats {
        Seats {
            cpus: (0..n).map(|_| AtomicUsize::new(Self::UNKNOWN)).collect(),
        }
    }

    /// Where thread `me` was last seen, if it was.
    fn seat(&self, me: usize) -> Option<usize> {
        Some(self.cpus[me].load(Ordering::Relaxed)).filter(|&c| c != Self::UNKNOWN)
    }

    /// Record the CPU thread `me` runs on now (once per item: `sched_getcpu` costs nanoseconds).
    fn note(&self, me: usize) -> Option<usize> {
        let cpu = placement::current_cpu()?;
        self.cpus[me].store(cpu, Ordering::Relaxed);
        Some(cpu)
    }

    /// Pool task `me` starting: if another thread of the call was last seen on this CPU, that
    /// thread is waiting for it while some other CPU may idle, so move off every CPU the call's
    /// other threads use (when one is left). Returns whether it moved.
    fn arrive(&self, me: usize) -> bool {
        let Some(here) = self.note(me) else {
            return false;
        };
        let others: Vec<usize> = (0..self.cpus.len())
            .filter(|&t| t != me)
            .filter_map(|t| self.seat(t))
            .collect();
        let moved = others.contains(&here) && placement::move_off(&others);
        if moved {
            self.note(me);
        }
        moved
    }

    /// The calling thread, once the pool tasks are woken: if one has not started yet, it may be
    /// queued behind this thread on this CPU, where it would wait until the scheduler preempts
    /// this thread or balances; yield once so that it runs, sees the crowding and moves
    /// ([`Seats::arrive`]). A yield with nothing else to run on this CPU returns at once; on a
    /// CPU the host keeps busy with other runnable threads it lets them go first: this call
    /// may take up to their time slice longer, while the CPU time each thread gets is the same.
    /// Only where the caller's CPU is known (the platform tells it, and a task can move).
    fn make_way(&self) {
        let waiting = (1..self.cpus.len()).any(|t| self.seat(t).is_none());
        if self.seat(0).is_some() && waiting {
            std::thread::yield_now();
        }
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

/// `f(i, piece)` for each `size`-byte piece of `buf`, in parallel like [`map`] (shared with
/// the calling thread; the pieces start no parallel work of their own).
pub(crate) fn for_each_piece(
    buf: &mut [u8],
    size: usize,
    f: impl Fn(usize, &mut [u8]) -> Result<()> + Sync + Send,
) -> Result<()> {
    for_each_of(buf.chunks_mut(size).collect(), f)
}

/// `f(i, piece)` for consecutive pieces of `buf` of the given `sizes` (which must add up to at
/// most `buf.len()`), in parallel like [`for_each_piece`] (shared with the calling thread): for
/// a region's bands of rows.
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
    for_each_of(pieces, f)
}

/// `f(i, piece)` for each piece, shared with the calling thread ([`for_each_piece`],
/// [`for_each_split`]).
fn for_each_of(
    pieces: Vec<&mut [u8]>,
    f: impl Fn(usize, &mut [u8]) -> Result<()> + Sync + Send,
) -> Result<()> {
    match how(pieces.len()) {
        How::Here => pieces
            .into_iter()
            .enumerate()
            .try_for_each(|(i, p)| f(i, p)),
        How::Pool(pool) => pool
            .install(|| stealing(pieces.into_par_iter(), || (), |_, i, p| f(i, p)))
            .map(drop),
        How::Shared(pool, helpers) => {
            share(&pool, helpers, pieces.into_iter(), || (), |_, i, p| f(i, p)).map(drop)
        }
    }
}

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

    // What a pool task of a shared call does when it starts, on a thread confined to two CPUs
    // (Linux only: elsewhere nothing moves).
    #[test]
    #[cfg(all(target_os = "linux", not(miri)))]
    fn a_pool_task_arriving_on_the_callers_cpu_moves_off_it() {
        use crate::runtime::placement::tests::{allowed, on_thread_confined_to, two_allowed};
        let Some(two) = two_allowed() else { return };
        // The caller was last seen on this CPU: the task moves to the other one. (Tried again
        // in the rare case the scheduler moves the thread between the two notes.)
        let (caller, moved, now, noted, kept) = on_thread_confined_to(&two, || {
            let mut tries = 0;
            loop {
                let seats = Seats::new(2);
                let caller = seats.note(0).unwrap();
                let moved = seats.arrive(1);
                tries += 1;
                if moved || tries == 20 {
                    let now = placement::current_cpu().unwrap();
                    let noted = seats.cpus[1].load(Ordering::Relaxed);
                    return (caller, moved, now, noted, allowed());
                }
            }
        });
        assert!(moved);
        assert_ne!(now, caller);
        assert_eq!(noted, now, "the task's seat is where it moved to");
        assert_eq!(kept, two.to_vec(), "the affinity is restored");
        // The caller was seen on another CPU, or not yet at all: the task stays. (Confined to
        // one CPU, where a wrong move would still report success.)
        let (stayed_apart, stayed_unknown, seated) = on_thread_confined_to(&two[..1], || {
            let seats = Seats::new(2);
            seats.cpus[0].store(two[1], Ordering::Relaxed);
            let apart = seats.arrive(1);
            let fresh = Seats::new(3);
            let unknown = fresh.arrive(2);
            (apart, unknown, fresh.seat(2) == Some(two[0]))
        });
        assert!(!stayed_apart);
        assert!(!stayed_unknown);
        assert!(seated, "an arriving task takes its seat");
    }

    // One test for everything that changes the process-wide pool: tests run on threads.
    // Not under Miri: rayon's deques (crossbeam-epoch) trip its Stacked Borrows check when a
    // pool thread registers (elsewhere under Miri one core means no pool); ThreadSanitizer
    // runs it (scripts/tsan.sh).
    #[test]
    #[cfg_attr(miri, ignore)]
    fn shared_calls_run_on_the_calling_thread_and_one_pool_task() {
        set_threads(2).unwrap();
        let me = std::thread::current().id();
        let ran = two_items_at_once();
        assert!(ran.contains(&me), "the calling thread took no item");
        assert_ne!(ran[0], ran[1]);

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
        let mut buf = vec![0u8; 12];
        for_each_split(&mut buf, &[1, 5, 0, 6], |i, p| {
            p.fill(i as u8 + 1);
            Ok(())
        })
        .unwrap();
        assert_eq!(buf, [1, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4]);

        // The lowest failing item's error, whichever thread saw a failure first.
        let fail = |i: usize| -> Result<usize> {
            match i {
                37 | 80 | 999 => Err(Error::InvalidArgument(format!("item {i}"))),
                _ => Ok(i),
            }
        };
        for _ in 0..20 {
            let e = map(1000, fail).unwrap_err();
            assert_eq!(
                e.to_string(),
                Error::InvalidArgument("item 37".into()).to_string()
            );
        }
        let mut buf = vec![0u8; 64];
        let e = for_each_piece(&mut buf, 8, |i, _| match i {
            5 => Err(Error::InvalidArgument("piece 5".into())),
            _ => Ok(()),
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            Error::InvalidArgument("piece 5".into()).to_string()
        );

        // Bands: item 3 fails last, after item 4 failed at once, and its error is returned.
        let item_3 = Error::InvalidArgument("item 3".into()).to_string();
        for _ in 0..5 {
            let mut buf = vec![0u8; 12];
            let e = for_each_split(&mut buf, &[1, 1, 1, 1, 4, 4], |i, _| match i {
                3 => {
                    std::thread::sleep(Duration::from_millis(20));
                    Err(Error::InvalidArgument("item 3".into()))
                }
                4 => Err(Error::InvalidArgument("item 4".into())),
                _ => Ok(()),
            });
            assert_eq!(e.unwrap_err().to_string(), item_3);
        }

        // The same on the pool (`map_on_pool`, and calls nested in pool items, which rayon
        // schedules by stealing): item 3 fails last, after items far behind it failed at once,
        // and its error is the one returned. With rayon's `Result` collection it was whichever
        // failure came first in time (item 80 here, almost always).
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
        for _ in 0..5 {
            assert_eq!(map_on_pool(1000, slow_low).unwrap_err().to_string(), item_3);
            let nested = map_on_pool(2, |_| map(1000, slow_low));
            assert_eq!(nested.unwrap_err().to_string(), item_3);
        }
        // Every item before the lowest failure ran; results stay in order on success.
        let ran = AtomicUsize::new(0);
        let _ = map_on_pool(100, |i| {
            ran.fetch_add(1, Ordering::Relaxed);
            slow_low(i)
        });
        assert!(ran.load(Ordering::Relaxed) >= 4);
        let in_order = map_on_pool(2, |k| map(100, move |i| Ok(k * 100 + i))).unwrap();
        assert_eq!(in_order.concat(), (0..200).collect::<Vec<_>>());

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

        // A panicking item reaches the caller (after the pool task is done), leaves the
        // thread able to share again, and poisons nothing.
        let caught = std::panic::catch_unwind(|| {
            map(8, |i| match i {
                3 => panic!("item 3"),
                _ => Ok(i),
            })
        });
        assert!(caught.is_err());
        assert!(!SHARING.get());
        let ran = two_items_at_once();
        assert!(ran.contains(&me));

        // Items that themselves start parallel work go to the pool: the caller only waits.
        let on_pool = map_on_pool(2, |_| Ok(std::thread::current().id())).unwrap();
        assert!(!on_pool.contains(&me));

        // One thread: everything on the calling thread.
        let two = pool().1.expect("a pool of 2");
        set_threads(1).unwrap();
        assert!(pool().1.is_none());
        assert_eq!(
            map(5, |_| Ok(std::thread::current().id())).unwrap(),
            vec![me; 5]
        );
        // Back to 2: the same pool, not new threads.
        set_threads(2).unwrap();
        assert!(Arc::ptr_eq(&two, &pool().1.unwrap()));
        // Another size: a new pool.
        set_threads(3).unwrap();
        let three = pool().1.unwrap();
        assert_eq!(three.current_num_threads(), 3);
        assert!(!Arc::ptr_eq(&two, &three));
        set_threads(0).unwrap();
    }
}
