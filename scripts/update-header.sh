#!/usr/bin/env bash
# Regenerate include/zarrshard.h from the Rust sources (build.rs writes it into OUT_DIR;
# this copies the fresh one into the tree). tests/header.rs fails until the two agree.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
cargo build --quiet --lib
out=$(ls -t target/debug/build/zarrshard-*/out/zarrshard.h | head -1)
mkdir -p include
cp "$out" include/zarrshard.h
echo "include/zarrshard.h updated from $out"
