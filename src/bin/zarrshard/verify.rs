//! `verify`: one line per problem (or, with `--json`, one JSON object); exit 1 if any. On
//! stderr, what was checked: shards stored, inner chunks decoded, and how many of those no
//! checksum covers.

use crate::one_line;
use crate::progress::{bar, Unit};
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;
use zarrshard::{Array, Error, FsStore};

/// `verify --json`: the schema (docs/cli.md).
#[derive(Serialize)]
struct Report {
    shards_checked: u64,
    problems: Vec<Problem>,
    /// Shard objects the store holds (0: the array reads as all fill value).
    shards_stored: u64,
    /// Inner chunks that decoded without error.
    chunks_decoded: u64,
    /// Of those, the ones no checksum covers: decoded, not verified.
    chunks_unverifiable: u64,
}

#[derive(Serialize)]
struct Problem {
    key: String,
    /// The inner chunk concerned, when the problem is about one.
    chunk: Option<Vec<u64>>,
    error: String,
}

pub fn run(array: &Array<FsStore>, json: bool) -> zarrshard::Result<ExitCode> {
    let shards = crate::saturating_product(&array.metadata().grid_shape());
    let progress = bar("verify", shards, Unit::Shards);
    let mut problems = Vec::new();
    let summary = array.verify_counted(&|n| progress.inc(n), |p| {
        problems.push(p);
        Ok(())
    })?;
    progress.finish_and_clear();
    let leftover = crate::repair::LEFTOVER;
    for key in array.leftover_temporaries()? {
        let error = Error::InvalidState(format!("{leftover}; `zarrshard repair` removes it"));
        problems.push(zarrshard::Problem { key, error });
    }
    let mut out = std::io::stdout().lock();
    if json {
        let report = Report {
            shards_checked: shards,
            shards_stored: summary.stored_shards,
            chunks_decoded: summary.chunks_decoded,
            chunks_unverifiable: summary.chunks_unverifiable,
            problems: problems
                .iter()
                .map(|p| Problem {
                    key: p.key.clone(),
                    chunk: match &p.error {
                        Error::Corrupt { chunk, .. } | Error::ChecksumMismatch { chunk, .. } => {
                            chunk.as_ref().map(|c| c.0.clone())
                        }
                        _ => None,
                    },
                    error: one_line(&p.error.text_without_shard()),
                })
                .collect(),
        };
        crate::write_json(&mut out, &report)?;
    } else {
        for p in &problems {
            writeln!(out, "{}", one_line(&p.to_string()))?;
        }
    }
    crate::diagnostic(&summary_line(&summary, shards));
    if problems.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        crate::diagnostic(&format!("{} problem(s) found", problems.len()));
        Ok(ExitCode::from(1))
    }
}

/// What was checked, on stderr whatever the outcome: an array with no shard stored reads as
/// all fill value, as a mistyped or never written one does, and chunks without a checksum
/// decode without proving their bytes, so neither is reported as verified.
fn summary_line(s: &zarrshard::VerifySummary, total: u64) -> String {
    if s.stored_shards == 0 {
        return format!(
            "0 of {total} shard(s) stored: the array reads as all fill value (nothing written yet, or a mistyped path?)"
        );
    }
    format!(
        "{} of {total} shard(s) stored, {} inner chunk(s) decoded, {} of them not verifiable (no checksum)",
        s.stored_shards, s.chunks_decoded, s.chunks_unverifiable
    )
}
