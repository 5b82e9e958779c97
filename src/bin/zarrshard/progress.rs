//! Progress bars on stderr (indicatif), drawn only when stderr is a terminal and `--quiet` is
//! not given, so scripts and tests see exactly the documented output.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// `--quiet`: no progress bars at all (set once, before any command runs).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// What a bar counts.
#[derive(Clone, Copy)]
pub enum Unit {
    Shards,
    Bytes,
}

/// A bar of `len` steps labelled `what`; hidden unless stderr is a terminal.
pub fn bar(what: &str, len: u64, unit: Unit) -> ProgressBar {
    if QUIET.load(Ordering::Relaxed) || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let template = match unit {
        Unit::Shards => "{msg} [{bar:40}] {pos}/{len} shards, {eta} left",
        Unit::Bytes => "{msg} [{bar:40}] {bytes}/{total_bytes}, {eta} left",
    };
    let style = ProgressStyle::with_template(template)
        .expect("the templates above are valid")
        .progress_chars("=> ");
    ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr())
        .with_style(style)
        .with_message(what.to_string())
}

/// A reader or writer that advances a bar by the bytes that pass through it.
pub struct Counted<T> {
    pub inner: T,
    pub bar: ProgressBar,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}
