//! The fuzz targets' own code (`fuzz/src/lib.rs`) run by the normal test suite on the stable
//! toolchain: every input a fuzzing run found failing (`fuzz/regressions/<target>/`, each fixed
//! in `src/`), the committed corpus (`fuzz/corpus/<target>/`), and the seeds, which must
//! decode to the data they were written from.

#[allow(dead_code)]
#[path = "../fuzz/src/lib.rs"]
mod fuzz;

use std::path::{Path, PathBuf};

fn dir(kind: &str, target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
        .join(target)
}

/// Files of `fuzz/<kind>/<target>/`, sorted.
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir(kind, target)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// Targets whose codecs are all Rust (zstd and blosc are C, which Miri cannot run).
fn runs_here(target: &str) -> bool {
    !cfg!(miri) || matches!(target, "index_parse" | "shard_decode_raw" | "capi_sequence")
}

/// Run every input of `kind`; under Miri only the first `miri_max` of each target.
fn replay(kind: &str, miri_max: usize) -> usize {
    let mut n = 0;
    for (target, run) in fuzz::TARGETS {
        if !runs_here(target) {
            continue;
        }
        let files = inputs(kind, target);
        let take = if cfg!(miri) { miri_max } else { files.len() };
        for file in files.iter().take(take) {
            eprintln!("{target}: {}", file.display());
            run(&std::fs::read(file).unwrap());
            n += 1;
        }
    }
    n
}

#[test]
fn fuzz_findings_stay_fixed() {
    // Findings so far: index_parse and shard_decode_raw (an overflow in dead_bytes).
    for target in ["index_parse", "shard_decode_raw"] {
        assert!(
            !inputs("regressions", target).is_empty(),
            "{target} findings missing"
        );
    }
    assert!(replay("regressions", usize::MAX) >= 2);
}

#[test]
fn fuzz_corpus_replays() {
    for (target, _) in fuzz::TARGETS {
        assert!(
            inputs("corpus", target).len() >= 4,
            "{target}: corpus missing"
        );
    }
    assert!(replay("corpus", 3) >= 3);
}

#[test]
fn fuzz_seeds_decode_to_their_data() {
    let mut checked = 0;
    for (target, name, bytes) in fuzz::seeds() {
        if !runs_here(target) {
            continue;
        }
        let layouts = match target {
            "shard_decode_raw" => fuzz::raw_layouts(),
            "shard_decode_codecs" if bytes[1] == 0 => fuzz::codec_layouts(),
            _ => Vec::new(),
        };
        if let Some(layout) = layouts.get((bytes[0] & 0x7f) as usize) {
            let object = &bytes[if target == "shard_decode_raw" { 1 } else { 2 }..];
            let size = layout.shard_repr().byte_size().unwrap() as usize;
            let mut shard = vec![0u8; size];
            layout.decode_shard_into(object, &mut shard).unwrap();
            assert_eq!(shard, fuzz::seed_data(size), "{target} {name}");
            checked += 1;
        }
        let run = fuzz::TARGETS.iter().find(|(t, _)| *t == target).unwrap().1;
        run(&bytes);
    }
    assert!(checked >= if cfg!(miri) { 10 } else { 20 });
}

/// Write the seeds into `fuzz/corpus/` (by hand: `cargo test --release --test fuzz_regressions
/// -- --ignored write_fuzz_seeds`; then `cargo fuzz cmin` keeps the corpus small).
#[test]
#[ignore]
fn write_fuzz_seeds() {
    for (target, name, bytes) in fuzz::seeds() {
        std::fs::create_dir_all(dir("corpus", target)).unwrap();
        std::fs::write(dir("corpus", target).join(format!("seed-{name}")), bytes).unwrap();
    }
}
