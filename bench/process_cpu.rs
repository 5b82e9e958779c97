//! Process CPU time, shared by the harness and the zarrs peer built alone, so "cores busy"
//! means the same in both.

/// CPU seconds (user + system, all threads) this process has used so far.
pub fn cpu_now() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(u.ru_utime) + tv(u.ru_stime)
}
