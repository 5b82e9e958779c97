#!/usr/bin/env bash
# Print the system libraries a program linking libzarrshard.a statically needs (what rustc's
# --print native-static-libs reports), cached in target/release/ under a key of Cargo.lock,
# Cargo.toml and build.rs: asking rustc means building the crate as a staticlib with other
# flags than `cargo build`, which then rebuilds it again, about a minute each way. With
# `--features cli`, as every script builds, so that nothing else rebuilds it either.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
KEY="$(cat Cargo.lock Cargo.toml build.rs | sha256sum | cut -c1-16)"
CACHE="target/release/native-static-libs-$KEY"
if [ ! -s "$CACHE" ]; then
    NATIVE="$(cargo rustc --release --features cli --lib --quiet --crate-type staticlib -- --print native-static-libs 2>&1 \
              | sed -n 's/.*native-static-libs: //p' | tail -n 1)"
    if [ -z "$NATIVE" ]; then
        NATIVE="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
        echo "native-static-libs.sh: rustc did not print native-static-libs; assuming: $NATIVE" >&2
    fi
    mkdir -p target/release
    echo "$NATIVE" >"$CACHE"
    # Back to `cargo build`'s flags, so the next build does not recompile.
    cargo build --release --features cli --lib --quiet
fi
cat "$CACHE"
