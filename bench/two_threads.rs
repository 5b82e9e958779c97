//! The raw codec on two plain threads, no zarrshard code: a reference for what two vCPUs give
//! the codec itself in a workload's own rounds, next to the ceiling (one thread's
//! speed × 2).
//!
//! The calling thread and one helper thread take items from one shared counter until none is
//! left. The helper lives as long as the runner and sleeps on a channel between samples, as a
//! pool's thread sleeps between a host's calls (no spinning), so a call pays what waking a
//! second vCPU costs on this machine. Placed as zarrshard places its pool task (its
//! `placement` module): a helper woken on the caller's CPU moves off it, and the caller yields
//! once after waking it. Unplaced, the helper often ran on the caller's vCPU after idleness
//! (1.0 cores busy), which measured the scheduler's choice rather than two cores.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

/// One sample's work: called on each of the two threads with the shared counter; takes item
/// indices with `fetch_add` until they run out.
pub type Work = Arc<dyn Fn(&AtomicUsize) + Send + Sync>;

pub struct TwoThreads {
    work: Work,
    next: Arc<AtomicUsize>,
    /// The CPU the calling thread ran on when it woke the helper.
    caller_cpu: Arc<AtomicUsize>,
    go: Option<mpsc::Sender<()>>,
    done: mpsc::Receiver<()>,
    helper: Option<std::thread::JoinHandle<()>>,
}

impl TwoThreads {
    pub fn new(work: Work) -> TwoThreads {
        let (go, wake) = mpsc::channel::<()>();
        let (finished, done) = mpsc::channel::<()>();
        let next = Arc::new(AtomicUsize::new(0));
        let caller_cpu = Arc::new(AtomicUsize::new(usize::MAX));
        let (w, n, c) = (work.clone(), next.clone(), caller_cpu.clone());
        let helper = std::thread::spawn(move || {
            while wake.recv().is_ok() {
                move_off(c.load(Ordering::SeqCst));
                w(&n);
                if finished.send(()).is_err() {
                    break;
                }
            }
        });
        TwoThreads { work, next, caller_cpu, go: Some(go), done, helper: Some(helper) }
    }

    /// One sample: wake the helper, work on this thread too, wait for the helper.
    pub fn run(&self) {
        self.next.store(0, Ordering::SeqCst);
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() };
        self.caller_cpu.store(if cpu < 0 { usize::MAX } else { cpu as usize }, Ordering::SeqCst);
        self.go.as_ref().expect("helper running").send(()).expect("helper alive");
        // A helper queued behind this thread on its CPU runs now, and moves.
        std::thread::yield_now();
        (self.work)(&self.next);
        self.done.recv().expect("helper alive");
    }
}

impl Drop for TwoThreads {
    fn drop(&mut self) {
        drop(self.go.take());
        if let Some(h) = self.helper.take() {
            let _ = h.join();
        }
    }
}

/// If this thread runs on `avoid`, move it to another allowed CPU (affinity narrowed, then
/// restored: nothing draws it back).
fn move_off(avoid: usize) {
    // SAFETY: sched_getcpu has no preconditions; the cpu_set_t values are plain bitmaps owned
    // here, passed with their size; pid 0 is this thread.
    unsafe {
        if avoid == usize::MAX || libc::sched_getcpu() != avoid as i32 {
            return;
        }
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) != 0 {
            return;
        }
        let mut elsewhere = allowed;
        libc::CPU_CLR(avoid, &mut elsewhere);
        if libc::CPU_COUNT(&elsewhere) == 0 {
            return;
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &elsewhere);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &allowed);
    }
}
