#!/usr/bin/env bash
# The Rust concurrency tests under ThreadSanitizer: nightly Rust with the standard library
# rebuilt instrumented (-Zbuild-std), so TSan sees every synchronisation (std, rayon, ours).
#   1. tests/concurrency.rs: 8 threads reading one ShardReader while 3 threads write other shards
#   2. tests/ffi.rs: threads on one C handle (concurrent reads; two writers get SHARD_ERR_BUSY)
#   3. src/runtime/threads.rs' unit test: work shared between the calling thread and the pool;
#      src/array/region.rs': 16 threads writing the parts of one region's buffer (nd::DisjointOut)
#   4. a negative control: a race on purpose, which TSan must report (so silence means something)
# Installs the nightly toolchain and rust-src when missing (idempotent). When they cannot be
# installed, prints a SKIP line and counts nothing as passed. Ends with `N passed, M failed`.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
passed=0
failed=0
TARGET=x86_64-unknown-linux-gnu
if ! { rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal; } ||
   ! rustup component add --toolchain nightly rust-src; then
    echo "SKIP tsan: the nightly toolchain or its rust-src component cannot be installed here"
    echo "0 passed, 0 failed"
    exit 0
fi
tsan() {
    RUSTFLAGS="-Zsanitizer=thread" RUSTDOCFLAGS="-Zsanitizer=thread" \
        TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ZS_THREAD_ITERS=10 \
        cargo +nightly test -Zbuild-std --target "$TARGET" --target-dir target/tsan "$@"
}
result() { # result NAME STATUS
    if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "PASS $1"; else failed=$((failed + 1)); echo "FAIL $1"; fi
}
START=$SECONDS
tsan --test concurrency
result "tsan concurrency" $?
tsan --test ffi concurrent
result "tsan ffi threads" $?
tsan --test index_cache threads_reading_through_a_small_cache
result "tsan threads reading through one handle's index cache while it is emptied" $?
tsan --lib runtime::threads::
result "tsan shared work (src/runtime/threads.rs)" $?
tsan --lib array::region::tests::sixteen_threads
result "tsan 16 threads writing one region's parts (src/array/region.rs, nd::DisjointOut)" $?
out="$(tsan --test concurrency -- --ignored tsan_negative_control 2>&1)"
status=$?
grep -m1 "SUMMARY: ThreadSanitizer: data race" <<<"$out"
[ $status -ne 0 ] && grep -q "SUMMARY: ThreadSanitizer: data race" <<<"$out"
result "tsan negative control (a race on purpose is reported)" $?
echo "scripts/tsan.sh: $((SECONDS - START))s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
