//! `zarrshard repair ARRAY_DIR [--dry-run]`: cut torn shards back to their last index that
//! proves itself intact (see `zarrshard::shard::repair`), and say per shard what was recovered and
//! what is lost.
//!
//! Exit codes: 0 nothing damaged; 2 every damaged shard recovered (with `--dry-run`:
//! recoverable, nothing written); 3 at least one damaged shard cannot be recovered (it is left
//! as it is); 1 any other error. Temporaries left by killed writers (`KEY.tmp-PID-N`) are
//! removed and listed, without changing the exit code.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use zarrshard::ShardRepair;

/// What a leftover temporary is, in `verify`'s and `repair`'s lines.
pub const LEFTOVER: &str = "a temporary file left by an interrupted write (not part of the array)";

pub fn run(array_dir: &Path, dry_run: bool) -> zarrshard::Result<ExitCode> {
    let array = super::open(array_dir)?;
    let done = array.repair(dry_run)?;
    let mut out = std::io::stdout().lock();
    for key in array.remove_leftover_temporaries(dry_run)? {
        let verb = if dry_run {
            "would be removed"
        } else {
            "removed"
        };
        writeln!(out, "{key}: {verb}: {LEFTOVER}")?;
    }
    let (mut recovered, mut lost) = (0, 0);
    for (key, outcome) in &done {
        match outcome {
            ShardRepair::Recovered {
                before,
                size,
                chunks,
            } => {
                recovered += 1;
                let verb = if dry_run { "recoverable" } else { "recovered" };
                writeln!(
                    out,
                    "{key}: {verb}: {chunks} inner chunk(s) under the index ending at byte {size}; lost: the {} byte(s) after it (the chunks and index of an interrupted write)",
                    before - size
                )?;
            }
            ShardRepair::Unrecoverable(why) => {
                lost += 1;
                writeln!(out, "{key}: cannot recover: {why} (left as it is)")?;
            }
            ShardRepair::Intact => {}
        }
    }
    crate::diagnostic(&format!(
        "{} damaged shard(s): {recovered} {}, {lost} unrecoverable",
        done.len(),
        if dry_run {
            "recoverable (dry run, nothing written)"
        } else {
            "recovered"
        }
    ));
    Ok(match (recovered, lost) {
        (0, 0) => ExitCode::SUCCESS,
        (_, 0) => ExitCode::from(2),
        _ => ExitCode::from(3),
    })
}
