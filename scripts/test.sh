#!/usr/bin/env bash
# Every test: the Rust unit, integration and property tests, then interoperability against
# zarr-python and tensorstore (installed from PyPI into .venv by scripts/venv.sh) and zarrs
# (crates.io, tests/interop/zarrs_peer), which write a matrix of sharded arrays that
# `zarrshard export` must reproduce byte for byte.
# Then a short fuzzing run of every fuzz target (scripts/fuzz.sh) and Miri over the core's tests
# (scripts/miri.sh); each installs its tools (cargo-fuzz, nightly miri) or prints SKIP.
# Idempotent; needs only the Rust toolchain and python3 (python3-venv is installed if missing).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
mkdir -p target
LOG="$REPO/target/test-logs"
rm -rf "$LOG"
mkdir -p "$LOG"

echo "== cargo test (release)"
cargo test --release --all-targets --features cli 2>&1 | tee "$LOG/cargo.log"
cargo_status=${PIPESTATUS[0]}

echo "== docs: rustdoc of the library with warnings as errors (broken links; #![deny(missing_docs)] in src/lib.rs)"
set +e
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --lib 2>&1 | tail -n 20 | tee "$LOG/doc.log"
doc_status=${PIPESTATUS[0]}
set -e

echo "== interop: zarr-python, tensorstore and zarrs write, zarrshard export reads"
"$REPO/scripts/venv.sh"
# zarrs (the Rust crate, pinned by its own Cargo.lock) as the third peer: tests/interop/zarrs_peer.
cargo build --release --locked --manifest-path tests/interop/zarrs_peer/Cargo.toml \
    --target-dir "$REPO/target/zarrs-peer" 2>&1 | tail -n 2
[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "building tests/interop/zarrs_peer failed"; exit 1; }
PY="$REPO/.venv/bin/python"
FIX="$REPO/target/interop-fixtures"
rm -rf "$FIX"
"$PY" tests/interop/write_fixtures.py "$FIX" > "$LOG/fixtures.log" 2>&1 || { cat "$LOG/fixtures.log"; exit 1; }
set +e
"$PY" tests/interop/check_export.py "$FIX" "$REPO/target/release/zarrshard" 2>&1 | tee "$LOG/interop.log"
export_status=${PIPESTATUS[0]}
echo "== interop: zarrshard import writes (each strategy), zarr-python, tensorstore and zarrs read"
"$PY" tests/interop/check_import.py "$FIX" "$REPO/target/release/zarrshard" 2>&1 | grep -v '^skip ' | tee "$LOG/import.log"
import_status=${PIPESTATUS[0]}
echo "== interop: zarrshard repack rewrites (shard shape; inner codecs + index location; unsharded arrays), zarr-python, tensorstore and zarrs read; zarrshard get"
"$PY" tests/interop/check_repack.py "$FIX" "$REPO/target/release/zarrshard" 2>&1 | tee "$LOG/repack.log"
repack_status=${PIPESTATUS[0]}
echo "== interop: data types zarr-python writes in object form (raw_bytes, null_terminated_bytes, fixed_length_utf32, numpy.datetime64/timedelta64, structured): export, import, repack; vlen string refused"
"$PY" tests/interop/check_dtypes.py "$REPO/target/tmp/dtypes-interop" "$REPO/target/release/zarrshard" 2>&1 | tee "$LOG/dtypes.log"
dtypes_status=${PIPESTATUS[0]}
echo "== regions: zarrshard's region writes (tests/region.rs), zarr-python, tensorstore and zarrs read"
"$PY" tests/interop/check_region.py "$REPO/target/tmp/region-interop" 2>&1 | tee "$LOG/region.log"
region_status=${PIPESTATUS[0]}
echo "== kerchunk references: fsspec + zarr-python read zarrshard refs sets (local, http:// from nginx); examples-c/http_read"
bash tests/refs/run.sh "$FIX" 2>&1 | tee "$LOG/refs.log"
refs_status=${PIPESTATUS[0]}
echo "== older formats: an independent Python writer/reader (tests/legacy) and zarrshard, both ways"
LFIX="$REPO/target/legacy-fixtures"
rm -rf "$LFIX"
"$PY" tests/legacy/legacy_formats.py write "$LFIX" > "$LOG/legacy-fixtures.log" 2>&1 || { cat "$LOG/legacy-fixtures.log"; exit 1; }
"$PY" tests/legacy/check_legacy.py "$LFIX" "$REPO/target/release/zarrshard" 2>&1 | tee "$LOG/legacy.log"
legacy_status=${PIPESTATUS[0]}
echo "== C: examples and C tests (strict C99, C++), ASan+UBSan, TSan, valgrind, install, pkg-config, CMake"
bash tests/c/run.sh 2>&1 | tee "$LOG/c.log"
c_status=${PIPESTATUS[0]}
echo "== Rust under ThreadSanitizer: nightly, -Zbuild-std (scripts/tsan.sh)"
bash scripts/tsan.sh 2>&1 | tee "$LOG/tsan.log"
tsan_status=${PIPESTATUS[0]}
echo "== fuzz: every target of fuzz/ for ${FUZZ_SECONDS:-20} s from the committed corpus (longer: scripts/fuzz.sh 600)"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}" 2>&1 | tee "$LOG/fuzz.log"
fuzz_status=${PIPESTATUS[0]}
echo "== miri: the core's tests that Miri can run (no C codecs)"
bash scripts/miri.sh 2>&1 | tee "$LOG/miri.log"
miri_status=${PIPESTATUS[0]}
bind_status=0
for lang in cpp java julia python; do
    [ -x "bindings/$lang/run.sh" ] || [ -f "bindings/$lang/run.sh" ] || continue
    echo "== bindings: $lang"
    bash "bindings/$lang/run.sh" 2>&1 | tee "$LOG/bind-$lang.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || bind_status=1
done
set -e

# One closing line over everything that ran.
# Count each runner once: cargo's "test result:" lines, and each other suite's closing line.
closing() { grep -hE '^[0-9]+ passed, [0-9]+ failed$' "$LOG/interop.log" "$LOG/import.log" "$LOG/repack.log" "$LOG/dtypes.log" "$LOG/region.log" "$LOG/refs.log" "$LOG/legacy.log" "$LOG/c.log" "$LOG/tsan.log" "$LOG/fuzz.log" "$LOG/miri.log" "$LOG"/bind-*.log; }
results=$( (grep -hoE '^test result: [A-Za-z]+\. [0-9]+ passed; [0-9]+ failed' "$LOG/cargo.log"; closing) )
passed=$(echo "$results" | grep -oE '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
failed=$(echo "$results" | grep -oE '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
echo "all: $passed passed, $failed failed"
[ "$cargo_status" -eq 0 ] && [ "$doc_status" -eq 0 ] && [ "$export_status" -eq 0 ] && [ "$import_status" -eq 0 ] && [ "$repack_status" -eq 0 ] && [ "$dtypes_status" -eq 0 ] && [ "$region_status" -eq 0 ] && [ "$refs_status" -eq 0 ] && [ "$legacy_status" -eq 0 ] && [ "$c_status" -eq 0 ] && [ "$tsan_status" -eq 0 ] && [ "$fuzz_status" -eq 0 ] && [ "$miri_status" -eq 0 ] && [ "$bind_status" -eq 0 ] && [ "$failed" -eq 0 ]
