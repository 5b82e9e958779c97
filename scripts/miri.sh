#!/usr/bin/env bash
# Miri (nightly) over the core's tests that it can run: the unit tests, the C ABI driven from
# Rust (tests/ffi.rs, inner chunks uncompressed under Miri), index validation, metadata errors, the spec examples, the writer,
# file I/O, the older formats, and the fuzz corpus replay of the targets whose codecs are all
# Rust. Skipped: tests that reach zstd, blosc or gzip encoding (libdeflate): C code, which
# Miri cannot run; and the
# property, CLI and subprocess tests (too slow under Miri, or not Rust).
#
#   scripts/miri.sh
#
# Installs the nightly `miri` and `rust-src` components when missing; prints a SKIP line when
# they cannot be fetched. Ends with `N passed, M failed` (Miri's test results summed).
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
LOG="$REPO/target/miri.log"
mkdir -p target

for c in miri rust-src; do
    if ! rustup +nightly component list --installed 2>/dev/null | grep -q "^$c"; then
        rustup component add --toolchain nightly "$c" >/dev/null 2>&1 || {
            echo "SKIP miri: the nightly $c component cannot be installed"
            exit 0
        }
    fi
done

# File tests use the real file system.
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}"
SKIP=(
    # zstd / blosc are C
    --skip bad_json_bad_arguments_and_statuses
    --skip every_strategy_gives_the_same_content_and_no_dead_bytes
    --skip update_sequences_then_compaction
    # gzip encoding (libdeflate, C)
    --skip whole_shard_is_one_read
    --skip v3_draft_keys_and_listing
    # gzip, zstd and blosc behind nested sharding
    --skip nested_shard_with_unused_space_behind_a_compressor
)
# Miri interprets each test binary on one core: built once, the binaries then run in two
# groups side by side (the machine has two cores; about 280 and 310 s of Miri each), each
# group's output in its own log, appended to $LOG in order.
GROUP1=(--lib --test spec_examples --test index_validation --test writer --test legacy)
GROUP2=(--test ffi --test metadata_errors --test io --test fuzz_regressions)
cargo +nightly miri test --no-run "${GROUP1[@]}" "${GROUP2[@]}" 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
if [ "$status" -eq 0 ]; then
    cargo +nightly miri test --no-fail-fast "${GROUP1[@]}" -- "${SKIP[@]}" >"$LOG.1" 2>&1 &
    pid1=$!
    cargo +nightly miri test --no-fail-fast "${GROUP2[@]}" -- "${SKIP[@]}" >"$LOG.2" 2>&1
    status=$?
    wait "$pid1" || status=1
    cat "$LOG.1" "$LOG.2" | tee -a "$LOG"
fi
results=$(grep -hoE '^test result: [A-Za-z]+\. [0-9]+ passed; [0-9]+ failed' "$LOG")
passed=$(echo "$results" | grep -oE '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
failed=$(echo "$results" | grep -oE '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
[ "$status" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
echo "$passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
