//! Which CPU a thread runs on, and moving a pool thread off a CPU another thread of the same
//! call already uses.
//!
//! Why: after a few milliseconds of idleness, Linux often queues the pool thread a shared call
//! wakes on the CPU of the thread that woke it (the caller, busy with the call's first items)
//! although the other CPU is idle, and the two take turns on one CPU until the scheduler
//! preempts the caller or balances, which for a call of a few milliseconds is most of it.
//! (Likely cause, from the scheduler's code rather than measured: its search for an idle CPU
//! at wake-up is cut short when the cache domain looked busy at its last balancing, and the
//! woken thread's previous CPU was that same one.) On the benchmark's VM, zstd over one
//! shard's chunks on a plain rayon pool, shared with the calling thread, ran on one core in 33
//! of 40 calls made after 20 ms of sleep, and in 9 of 40 back to back (`profile.rs rshare`
//! in `bench/examples`; `BENCHMARKS.md`, *Waking the pool after idleness*). The cure is the
//! one a thread has over its own placement: its CPU affinity narrowed to exclude the crowded
//! CPU (the kernel migrates it at once) and restored right after (nothing draws it back).
//!
//! Only pool threads move, never the host's: the caller of a shared call at most yields its
//! CPU once so that a helper queued behind it gets to run, see the crowding and move
//! ([`crate::runtime::threads`]). Linux only; elsewhere (and under Miri) placement is unknown and
//! nothing moves.

/// The CPU the calling thread runs on now (it may be moved at any moment after), or `None`
/// where the platform does not say.
#[cfg(all(target_os = "linux", not(miri)))]
pub(crate) fn current_cpu() -> Option<usize> {
    nix::sched::sched_getcpu().ok()
}

/// The CPU the calling thread runs on now (it may be moved at any moment after), or `None`
/// where the platform does not say.
#[cfg(not(all(target_os = "linux", not(miri))))]
pub(crate) fn current_cpu() -> Option<usize> {
    None
}

/// Move the calling thread to a CPU it may run on that is not in `avoid`: its affinity is
/// narrowed to exclude them, then restored to exactly what it was. Returns whether it moved;
/// `false`, with the affinity unchanged, when every allowed CPU is in `avoid` or the platform
/// refuses. For the library's own pool threads only: a host thread's affinity is the host's.
/// (Another thread changing this one's affinity between the two calls would be undone: a
/// window of microseconds, on a thread no host is expected to pin.)
#[cfg(all(target_os = "linux", not(miri)))]
pub(crate) fn move_off(avoid: &[usize]) -> bool {
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let this_thread = Pid::from_raw(0);
    let Ok(allowed) = sched_getaffinity(this_thread) else {
        return false;
    };
    let mut elsewhere = allowed;
    for &cpu in avoid {
        // Fails only for a CPU past the set's size, which `allowed` cannot hold either.
        let _ = elsewhere.unset(cpu);
    }
    if !(0..CpuSet::count()).any(|cpu| elsewhere.is_set(cpu).unwrap_or(false)) {
        return false;
    }
    let moved = sched_setaffinity(this_thread, &elsewhere).is_ok();
    // Restoring cannot fail where setting a subset of it succeeded; if it did, the thread
    // would keep the narrower set, which is still one it was allowed.
    let _ = sched_setaffinity(this_thread, &allowed);
    moved
}

/// Move the calling thread to a CPU it may run on that is not in `avoid`: a no-op returning
/// `false` where the platform does not support it.
#[cfg(not(all(target_os = "linux", not(miri))))]
pub(crate) fn move_off(_avoid: &[usize]) -> bool {
    false
}

#[cfg(all(test, target_os = "linux", not(miri)))]
pub(crate) mod tests {
    use super::*;
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    use nix::unistd::Pid;

    /// The CPUs the calling thread may run on.
    pub(crate) fn allowed() -> Vec<usize> {
        let set = sched_getaffinity(Pid::from_raw(0)).unwrap();
        (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap())
            .collect()
    }

    /// On a thread of its own (its affinity is per thread): `f` with the thread confined to
    /// `cpus` first.
    pub(crate) fn on_thread_confined_to<T: Send>(
        cpus: &[usize],
        f: impl FnOnce() -> T + Send,
    ) -> T {
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut set = CpuSet::new();
                for &c in cpus {
                    set.set(c).unwrap();
                }
                sched_setaffinity(Pid::from_raw(0), &set).unwrap();
                f()
            })
            .join()
            .unwrap()
        })
    }

    /// Two CPUs this process may run on, or `None` (the test is skipped, and says so) where it
    /// may run on one only.
    pub(crate) fn two_allowed() -> Option<[usize; 2]> {
        match allowed()[..] {
            [a, b, ..] => Some([a, b]),
            _ => {
                eprintln!("skipped: this process may run on one CPU only");
                None
            }
        }
    }

    #[test]
    fn moves_off_the_cpu_and_keeps_its_affinity() {
        let Some(two) = two_allowed() else { return };
        // Confined to two CPUs, it must land on the other one, and keep both allowed.
        let (before, moved, after, kept) = on_thread_confined_to(&two, || {
            let before = current_cpu().unwrap();
            let moved = move_off(&[before]);
            (before, moved, current_cpu().unwrap(), allowed())
        });
        assert!(moved);
        assert_ne!(after, before);
        assert!(two.contains(&after), "{after} is not one of {two:?}");
        assert_eq!(kept, two.to_vec());
    }

    #[test]
    fn stays_when_no_allowed_cpu_is_left() {
        let cpus = allowed();
        // Allowed one CPU, asked to avoid it: nowhere to go, the affinity untouched.
        let (moved, cpu, kept) = on_thread_confined_to(&cpus[..1], || {
            let moved = move_off(&[cpus[0]]);
            (moved, current_cpu().unwrap(), allowed())
        });
        assert!(!moved);
        assert_eq!(cpu, cpus[0]);
        assert_eq!(kept, vec![cpus[0]]);
        // Avoiding every allowed CPU is the same.
        if let Some(two) = two_allowed() {
            let (moved, kept) = on_thread_confined_to(&two, || (move_off(&two), allowed()));
            assert!(!moved);
            assert_eq!(kept, two.to_vec());
        }
    }
}
