#!/usr/bin/env bash
# The performance benchmark: zarrshard against zarrs, tensorstore and zarr-python, in one run
# on the same data and metadata, implementations alternated, one table.
#
#   scripts/bench.sh          -> table on stdout and in target/bench/results.md, then the
#                                acquire-zarr comparison in target/bench/acquire.md
#   scripts/bench.sh acquire  -> only the acquire-zarr comparison (about 1 minute on 2 cores)
#   scripts/bench.sh scaling  -> the scaling mode (bench/examples/scaling.rs): zarrshard, zarrs
#                                and tensorstore at 1, 2, 4, 8, 16 threads; tables on stdout
#                                and in target/bench/scaling.md (ZARRSHARD_SCALING_* settings
#                                in bench/README.md)
#   scripts/bench.sh ab REV   -> old vs new: the current tree's harness (Rust rows only) built
#                                against the library at git revision REV (ZARRSHARD_AB_HARNESS=own:
#                                REV's own harness) and against the current tree, run alternately
#                                (ZARRSHARD_AB_ROUNDS runs each, default 3); per-row medians
#                                and new/old in target/bench/ab.md
#   scripts/bench.sh python [ARGS] -> the Python package (bindings/python, installed into
#                                target/pypkg, not into the venv) against zarr-python (default
#                                and zarrs pipelines) and tensorstore: bench/python/compare.py
#                                ARGS (--dir DIR, --reps N, --reads K); table on stdout and in
#                                target/bench/python.md (a few minutes on 2 cores)
#
# Not part of the test suite (CI does not run it). Idempotent: creates the Python venv when
# missing (scripts/venv.sh: pinned zarr-python + tensorstore), builds the harness in release
# mode (bench/, its own cargo package and target dir) and zarrs alone (bench/zarrs-shipped),
# runs it. About 3-4 minutes on 2 cores once built (longer while other processes keep the
# machine busy: the harness waits for quiet, within a 240 s budget).
#
# Environment: ZARRSHARD_BENCH_NO_PEERS=1 skips the Python peers; ZARRSHARD_BENCH_QUICK=1
# runs 2 repetitions per measurement (a smoke test, not numbers to quote);
# ZARRSHARD_BENCH_KEEP=1 keeps the work directory (then `bench/peers.py --workdir DIR`
# reruns the peers alone); ZARRSHARD_BENCH_DIR=DIR puts it at DIR (default: under $TMPDIR
# or /tmp, which must be a local disk). ZARRSHARD_BENCH_NO_ACQUIRE=1 skips the acquire-zarr
# comparison: bench/acquire/stream.c (the C API: directory store, create, append per frame)
# against acquire-zarr's Python API (PyPI, in .venv-acquire from `scripts/venv.sh acquire`)
# streaming the same frames with the same chunks, shards and codec (bench/acquire/compare.py).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="$REPO/target/bench"
OUT="$OUT_DIR/results.md"
log() { echo "[bench.sh] $*" >&2; }

start=$(date +%s)

# The acquire-zarr comparison: the C program built against the release static library.
acquire_compare() {
    log "acquire-zarr comparison: venv (scripts/venv.sh acquire), library, bench/acquire/stream"
    local py native
    py="$("$REPO/scripts/venv.sh" acquire | tail -n 1)"
    (cd "$REPO" && cargo build --release --features cli --lib >&2)
    native="$(cd "$REPO" && cargo rustc --release --features cli --lib --crate-type staticlib -- \
        --print native-static-libs 2>&1 | sed -n 's/.*native-static-libs: //p' | tail -n 1)"
    mkdir -p "$OUT_DIR"
    gcc -std=c99 -Wall -Wextra -Werror -pedantic -O2 -I"$REPO/include" \
        "$REPO/bench/acquire/stream.c" -o "$OUT_DIR/acquire-stream" \
        "$REPO/target/release/libzarrshard.a" ${native:--lgcc_s -lutil -lrt -lpthread -lm -ldl -lc}
    local work="${ZARRSHARD_BENCH_DIR:-${TMPDIR:-/tmp}}/zarrshard-acquire"
    rm -rf "$work"
    "$py" "$REPO/bench/acquire/compare.py" --stream "$OUT_DIR/acquire-stream" --workdir "$work" \
        > "$OUT_DIR/acquire.md"
    rm -rf "$work"
    cat "$OUT_DIR/acquire.md"
    log "acquire-zarr comparison in $OUT_DIR/acquire.md"
}
if [ "${1:-}" = acquire ]; then
    acquire_compare
    log "done in $(( $(date +%s) - start )) s"
    exit 0
fi

# The harness's executable for the bench/ package at $1, built into the target directory $2
# (default bench/target). The two sides of an A/B need directories of their own: cargo gives
# the same package at two paths one build-script output in a shared one, and the second side
# was then built with the first side's (removed) source.
build_compare() {
    CARGO_TARGET_DIR="${2:-$REPO/bench/target}" cargo bench --manifest-path "$1/bench/Cargo.toml" \
        --bench compare --no-run --message-format=json \
        | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "compare" and m.get("executable"):
        print(m["executable"])' | tail -n 1
}

if [ "${1:-}" = ab ]; then
    rev="${2:?usage: scripts/bench.sh ab REV}"
    old_commit="$(git -C "$REPO" rev-parse --short "$rev^{commit}")"
    new_label="$(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" status --porcelain -- src Cargo.toml bench | grep -q . && echo +dirty || true)"
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/zarrshard-ab.XXXXXX")"
    trap 'git -C "$REPO" worktree remove --force "$tmp/old" 2>/dev/null; rm -rf "$tmp"' EXIT
    log "old: $old_commit in a temporary worktree; building the harness against it"
    git -C "$REPO" worktree add --detach "$tmp/old" "$old_commit" >&2
    # The same harness on both sides (only the library differs), unless
    # ZARRSHARD_AB_HARNESS=own: REV's own bench/.
    if [ "${ZARRSHARD_AB_HARNESS:-current}" != own ]; then
        rm -rf "$tmp/old/bench"
        tar -C "$REPO" --exclude=bench/target --exclude=bench/zarrs-shipped/target -cf - bench \
            | tar -C "$tmp/old" -xf -
    fi
    # Seeded with bench/target's compiled dependencies, so zarrs is not compiled again.
    if [ -d "$REPO/bench/target" ]; then cp -a "$REPO/bench/target" "$tmp/target-old"; fi
    old_bin="$(build_compare "$tmp/old" "$tmp/target-old")"
    [ -x "$old_bin" ] || { log "building the harness at $old_commit failed"; exit 1; }
    cp "$old_bin" "$tmp/compare-old"
    git -C "$REPO" worktree remove --force "$tmp/old"
    log "new: the current tree ($new_label); building its harness"
    new_bin="$(build_compare "$REPO")"
    [ -x "$new_bin" ] || { log "building the harness for the current tree failed"; exit 1; }
    cp "$new_bin" "$tmp/compare-new"
    mkdir -p "$OUT_DIR"
    # Rust rows only; zarrs built alone is not part of an A/B of zarrshard.
    export ZARRSHARD_BENCH_NO_PEERS=1 ZARRSHARD_BENCH_ZARRS_SHIPPED=/nonexistent
    cd "$REPO"
    python3 "$REPO/bench/ab.py" --old "$tmp/compare-old" --new "$tmp/compare-new" \
        --rounds "${ZARRSHARD_AB_ROUNDS:-3}" --old-label "$old_commit" --new-label "$new_label" \
        --out "$OUT_DIR/ab.md"
    log "done in $(( $(date +%s) - start )) s; table in $OUT_DIR/ab.md"
    exit 0
fi

# The Python package against its Python peers, in the venv of `scripts/venv.sh python`.
if [ "${1:-}" = python ]; then
    shift
    log "Python venv (scripts/venv.sh python)"
    py="$("$REPO/scripts/venv.sh" python | tail -n 1)"
    log "library (release) and the package, installed into target/pypkg"
    (cd "$REPO" && cargo build --release --features cli --lib >&2)
    rm -rf "$REPO/target/pypkg"
    ZARRSHARD_LIB="$REPO/target/release/libzarrshard.so" "$py" -m pip install --disable-pip-version-check \
        --no-build-isolation --no-deps -q --target "$REPO/target/pypkg" "$REPO/bindings/python" >&2
    mkdir -p "$OUT_DIR"
    tmp="$(mktemp "$OUT_DIR/python.md.XXXXXX")"
    trap 'rm -f "$tmp"' EXIT
    PYTHONPATH="$REPO/target/pypkg" "$py" "$REPO/bench/python/compare.py" "$@" > "$tmp"
    chmod 644 "$tmp"
    mv "$tmp" "$OUT_DIR/python.md"
    trap - EXIT
    cat "$OUT_DIR/python.md"
    log "done in $(( $(date +%s) - start )) s; table in $OUT_DIR/python.md"
    exit 0
fi

if [ "${1:-}" = scaling ]; then
    if [ -z "${ZARRSHARD_BENCH_NO_PEERS:-}" ]; then
        log "Python venv (scripts/venv.sh)"
        ZARRSHARD_BENCH_PYTHON="$("$REPO/scripts/venv.sh" | tail -n 1)"
        export ZARRSHARD_BENCH_PYTHON
    fi
    log "building the scaling mode (release)"
    cargo build --release --manifest-path "$REPO/bench/Cargo.toml" --example scaling >&2
    cd "$REPO"
    ZARRSHARD_SCALING_OUT="$OUT_DIR/scaling.md" "$REPO/bench/target/release/examples/scaling"
    log "done in $(( $(date +%s) - start )) s; tables in $OUT_DIR/scaling.md"
    exit 0
fi

if [ -z "${ZARRSHARD_BENCH_NO_PEERS:-}" ]; then
    log "Python venv (scripts/venv.sh)"
    ZARRSHARD_BENCH_PYTHON="$("$REPO/scripts/venv.sh" | tail -n 1)"
    export ZARRSHARD_BENCH_PYTHON
fi

log "building the harness (release)"
cargo bench --manifest-path "$REPO/bench/Cargo.toml" --no-run >&2

# zarrs built alone (bench/zarrs-shipped, its own lock file): in the harness's process flate2's
# features are unified with zarrshard's, so zarrs there runs on zlib-rs; alone it keeps
# flate2's default backend (miniz_oxide), as a user of zarrs' `gzip` feature gets it.
log "building zarrs alone (release)"
SHIPPED="$REPO/bench/zarrs-shipped/Cargo.toml"
cargo build --release --locked --manifest-path "$SHIPPED" >&2
if cargo tree --locked --manifest-path "$SHIPPED" -e normal -i zlib-rs 2>/dev/null | grep -q zlib-rs; then
    log "bench/zarrs-shipped links zlib-rs: it no longer measures flate2's default backend"
    exit 1
fi
export ZARRSHARD_BENCH_ZARRS_SHIPPED="$REPO/bench/zarrs-shipped/target/release/zarrs-shipped-peer"

mkdir -p "$OUT_DIR"
log "running (progress on stderr; the table goes to $OUT)"
tmp="$(mktemp "$OUT_DIR/results.md.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
cargo bench --manifest-path "$REPO/bench/Cargo.toml" --bench compare -q > "$tmp"
chmod 644 "$tmp"
mv "$tmp" "$OUT"
trap - EXIT
cat "$OUT"
[ -n "${ZARRSHARD_BENCH_NO_ACQUIRE:-}" ] || acquire_compare
log "done in $(( $(date +%s) - start )) s; table in $OUT"
