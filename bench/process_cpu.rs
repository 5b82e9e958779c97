//! Process CPU time, shared by the harnesses and the zarrs peer built alone, so "cores busy"
//! means the same in all; and the machine's and other processes' CPU time (`/proc`), so a
//! harness can tell how much else ran during a measurement.

/// CPU seconds (user + system, all threads) this process has used so far.
pub fn cpu_now() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

#[allow(dead_code)] // used by the two below only
fn clk_tck() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

/// CPU seconds all processes spent busy so far (`/proc/stat`: everything but idle and
/// iowait), to see what else ran on the machine during a measurement.
#[allow(dead_code)] // the zarrs peer built alone does not look at the machine
pub fn machine_busy() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<f64> = stat.lines().next()?.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal
    Some((f.iter().take(8).sum::<f64>() - f.get(3)? - f.get(4)?) / clk_tck())
}

/// CPU seconds of process `pid` so far (`/proc/PID/stat` utime + stime).
#[allow(dead_code)] // the zarrs peer built alone does not look at other processes
pub fn process_cpu(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `rest` starts at field 3.
    Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / clk_tck())
}
