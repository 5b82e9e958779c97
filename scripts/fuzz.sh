#!/usr/bin/env bash
# Fuzz every target of fuzz/ (cargo-fuzz, libFuzzer + ASan) for SECONDS each, two at a time:
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     default 600; scripts/test.sh runs it with 20
#
# Each target starts from the committed corpus fuzz/corpus/<target>/ (copied to
# target/fuzz/corpus/, so a run never changes the repository) with -rss_limit_mb=2048 (an
# input that makes the library allocate more is a finding: memory is bounded by configuration,
# not by what an input claims), -max_len=4096 and -timeout=10. Prints one line per target with
# libFuzzer's executions, then `N passed, M failed`. A failing input is kept in
# target/fuzz/artifacts/; save it as fuzz/regressions/<target>/<name> (tests/fuzz_regressions.rs
# replays it) once src/ is fixed.
#
# Installs what it needs when missing: cargo-fuzz (cargo install --locked) and a nightly
# toolchain (libFuzzer's sanitizer flags are unstable); with no nightly it uses the stable
# compiler with RUSTC_BOOTSTRAP=1. When a tool cannot be fetched it prints a SKIP line and
# exits 0 without a closing line, so nothing counts as passed.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO/fuzz"
SECS="${1:-600}"
TARGETS=(index_parse shard_decode_raw shard_decode_codecs metadata_parse capi_sequence store_listing)
WORK="$REPO/target/fuzz"
mkdir -p "$WORK/logs" "$WORK/artifacts"
rm -f "$WORK/logs"/*.result

skip() {
    echo "SKIP fuzz: $*"
    exit 0
}

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked >"$WORK/logs/install.log" 2>&1 ||
        skip "cargo install cargo-fuzz failed (see $WORK/logs/install.log)"
fi
if cargo +nightly --version >/dev/null 2>&1; then
    FUZZ=(cargo +nightly fuzz)
elif rustup toolchain install nightly --profile minimal >"$WORK/logs/nightly.log" 2>&1; then
    FUZZ=(cargo +nightly fuzz)
else
    FUZZ=(env RUSTC_BOOTSTRAP=1 cargo fuzz)
fi
echo "building the fuzz targets (${FUZZ[*]} build)"
"${FUZZ[@]}" build >"$WORK/logs/build.log" 2>&1 || {
    tail -n 20 "$WORK/logs/build.log"
    echo "FAIL fuzz build"
    echo "0 passed, 1 failed"
    exit 1
}
BIN="$REPO/fuzz/target/x86_64-unknown-linux-gnu/release"
# ASan's one-definition-rule check reports libdeflate's decompressor, whose templated
# functions (generic and BMI2 builds in one C file) each hold a function-local static of the
# same name: a false positive on C statics (and code zarrshard does not call: it only encodes
# with libdeflate). Every other ASan check stays on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_odr_violation=0"

# fuzz TARGET: run it; its result line goes to $WORK/logs/TARGET.result.
fuzz() {
    local t="$1" corpus="$WORK/corpus/$1" log="$WORK/logs/$1.log"
    mkdir -p "$corpus"
    cp -n "$REPO/fuzz/corpus/$t"/* "$corpus/" 2>/dev/null
    rm -f "$WORK/artifacts/$t"-*
    "$BIN/$t" -max_total_time="$SECS" -rss_limit_mb=2048 -max_len=4096 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$WORK/artifacts/$t-" "$corpus" >"$log" 2>&1
    local rc=$? execs inputs
    execs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | awk '{print $2}')
    inputs=$(find "$corpus" -type f | wc -l)
    if [ "$rc" -eq 0 ] && [ -z "$(ls "$WORK/artifacts/$t"-* 2>/dev/null)" ]; then
        echo "PASS $t: ${execs:-?} executions in ${SECS}s, corpus $inputs inputs" >"$log.result"
    else
        echo "FAIL $t: $(ls "$WORK/artifacts/$t"-* 2>/dev/null | head -n 1) (see $log)" >"$log.result"
    fi
}

# Two at a time: the machine has two cores.
for t in "${TARGETS[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
    fuzz "$t" &
done
wait
passed=0
failed=0
for t in "${TARGETS[@]}"; do
    line="$(cat "$WORK/logs/$t.log.result")"
    echo "$line"
    case "$line" in PASS*) passed=$((passed + 1)) ;; *) failed=$((failed + 1)) ;; esac
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
