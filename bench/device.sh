#!/usr/bin/env bash
# One-shot run of the scaling mode on a many-core machine that has no toolchain and no
# network (e.g. a 16-core machine lent for one prepared run): the binary is built and stripped
# on the development machine and carried with the working tree (bench/README.md, "Scaling on
# another machine"). Run from anywhere; works in the repository root:
#
#   bench/device.sh            -> machine summary, then the tables on stdout and in
#                                 $OUT/scaling.md (OUT defaults to target/bench); progress in
#                                 $OUT/scaling.log
#
# Fits a 10-minute limit: 5 rounds per cell (ZARRSHARD_SCALING_REPS), no measurement starts
# after 420 s (ZARRSHARD_SCALING_DEADLINE; the rest is marked skipped), the binary is stopped
# at 560 s (ZARRSHARD_DEVICE_TIMEOUT). The tables are rewritten after every thread count, so a
# run cut short leaves what it measured. tensorstore runs when a Python with numpy and
# tensorstore is found (ZARRSHARD_BENCH_PYTHON, .venv/bin/python, python3); otherwise it is
# skipped, with a line saying so.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN="${ZARRSHARD_SCALING_BIN:-bench/target/scaling-device}"
OUT_DIR="${OUT:-target/bench}"
mkdir -p "$OUT_DIR"
if [ ! -x "$BIN" ]; then
    echo "device.sh: $BIN not found: build it and carry it first (bench/README.md)"
    exit 2
fi

echo "== machine"
echo "cores: $(nproc) (online: $(getconf _NPROCESSORS_ONLN)); kernel $(uname -r)"
lscpu 2>/dev/null | grep -E '^(Model name|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node\(s\))' || true
free -g 2>/dev/null | head -n 2 || true
df -h "${TMPDIR:-/tmp}" 2>/dev/null | tail -n 1 || true

py=""
for c in "${ZARRSHARD_BENCH_PYTHON:-}" .venv/bin/python python3; do
    if [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && "$c" -c 'import numpy, tensorstore' >/dev/null 2>&1; then
        py="$(command -v "$c")"
        break
    fi
done
if [ -n "$py" ]; then
    export ZARRSHARD_BENCH_PYTHON="$py"
    echo "tensorstore: $("$py" -c 'from importlib.metadata import version; print(version("tensorstore"))') ($py)"
else
    export ZARRSHARD_BENCH_NO_PEERS=1
    echo "device.sh: no Python with numpy and tensorstore found: tensorstore skipped"
fi

export ZARRSHARD_SCALING_REPS="${ZARRSHARD_SCALING_REPS:-5}"
export ZARRSHARD_SCALING_DEADLINE="${ZARRSHARD_SCALING_DEADLINE:-420}"
export ZARRSHARD_SCALING_OUT="$OUT_DIR/scaling.md"
export ZARRSHARD_BENCH_DIR="${ZARRSHARD_BENCH_DIR:-${TMPDIR:-/tmp}/zarrshard-scaling}"

echo "== scaling (progress in $OUT_DIR/scaling.log)"
start=$(date +%s)
timeout "${ZARRSHARD_DEVICE_TIMEOUT:-560}" "$BIN" > "$OUT_DIR/scaling.stdout" 2> "$OUT_DIR/scaling.log"
rc=$?
rm -rf "$ZARRSHARD_BENCH_DIR"
echo "exit status $rc after $(( $(date +%s) - start )) s"
if [ -s "$OUT_DIR/scaling.md" ]; then
    cat "$OUT_DIR/scaling.md"
else
    echo "no tables; the end of the log:"
    tail -n 30 "$OUT_DIR/scaling.log"
fi
exit "$rc"
