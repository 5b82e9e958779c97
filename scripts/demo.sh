#!/usr/bin/env bash
# The main job: build zarrshard, write a sharded Zarr v3 array, read it back, and run the
# command-line tool on it. Works on a fresh machine with the Rust toolchain.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
OUT="${1:-$REPO/demo-out}"
rm -rf "$OUT"
cargo build --release --quiet --bin zarrshard --example demo
ZS="$REPO/target/release/zarrshard"
"$REPO/target/release/examples/demo" "$OUT/image.zarr"
echo "--- zarrshard info"
"$ZS" info "$OUT/image.zarr"
echo "--- zarrshard verify"
"$ZS" verify "$OUT/image.zarr" && echo "clean"
echo "--- zarrshard inspect (first rows)"
"$ZS" inspect "$OUT/image.zarr" c/0/1 | head -5
"$ZS" inspect "$OUT/image.zarr" c/0/1 | tail -1
echo "--- zarrshard export"
"$ZS" export "$OUT/image.zarr" "$OUT/image.raw"
ls -l "$OUT/image.raw"
