//! `verify`: one line per problem (or, with `--json`, one JSON object); exit 1 if any.

use crate::one_line;
use crate::progress::{bar, Unit};
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;
use zarrshard::{Array, Error, FsStore};

/// `verify --json`: the schema (README, "Command-line tool").
#[derive(Serialize)]
struct Report {
    shards_checked: u64,
    problems: Vec<Problem>,
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
    let mut problems = array.verify_with_progress(&|n| progress.inc(n))?;
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
                    error: one_line(&p.error.to_string()),
                })
                .collect(),
        };
        crate::write_json(&mut out, &report)?;
    } else {
        for p in &problems {
            writeln!(out, "{}", one_line(&p.to_string()))?;
        }
    }
    if problems.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        crate::diagnostic(&format!("{} problem(s) found", problems.len()));
        Ok(ExitCode::from(1))
    }
}
