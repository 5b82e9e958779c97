#!/usr/bin/env bash
# The main job: build libzarrshard, build the C example that uses it through the C ABI with a
# POSIX file back end, write a complete sharded Zarr v3 array with it (zarr.json + shards),
# read inner chunks back, then look at the array with the zarrshard command-line tool.
# Works on a fresh machine with the Rust toolchain and a C compiler (gcc; installed with apt
# when missing).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
OUT="${1:-$REPO/demo-out}"
command -v gcc >/dev/null || { apt-get update && apt-get install -y gcc; }
cargo build --release --quiet --features cli --lib --bin zarrshard
mkdir -p target/c/demo
gcc -std=c99 -Wall -Wextra -Werror -pedantic -O2 -Iinclude -Iexamples-c \
    examples-c/write_array.c examples-c/posix_io.c target/release/libzarrshard.a \
    -lpthread -ldl -lm -o target/c/demo/write_array
rm -rf "$OUT"
mkdir -p "$OUT"
echo "--- examples-c/write_array (C, through libzarrshard's C ABI)"
target/c/demo/write_array "$OUT/image.zarr"
ZS="$REPO/target/release/zarrshard"
echo "--- zarrshard info"
"$ZS" info "$OUT/image.zarr"
echo "--- zarrshard verify"
"$ZS" verify "$OUT/image.zarr" && echo "clean"
echo "--- zarrshard inspect c/0/1 (first rows, summary)"
"$ZS" inspect "$OUT/image.zarr" c/0/1 | head -4
"$ZS" inspect "$OUT/image.zarr" c/0/1 | tail -1
echo "--- the array is in $OUT/image.zarr (zarr-python reads it: tests/c/run.sh checks)"
