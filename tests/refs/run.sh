#!/usr/bin/env bash
# Kerchunk references and HTTP reads against a real HTTP server (Debian's nginx on loopback):
#   1. check_refs.py: fsspec's ReferenceFileSystem + zarr-python read `zarrshard refs` sets
#      (JSON v0, v1, Parquet; local files and http://) equal to what the writers wrote;
#      check_edge_refs.py: the same for sets at their edges (a fill chunk starting with
#      `base64:`, large fill chunks, shard keys with braces in JSON v1);
#   2. examples-c/http_read.c (libcurl range requests) reads inner chunks over HTTP:
#      2 requests cold, 1 warm, values equal (check_http_read.py).
# Usage: tests/refs/run.sh FIXTURES_DIR   (the output of tests/interop/write_fixtures.py)
# Needs target/release/{zarrshard,libzarrshard.a} and .venv (scripts/venv.sh); installs nginx
# and libcurl's headers from Debian when missing. Prints "N passed, M failed" per part.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
FIX="$(cd "$1" && pwd)"
PY="$REPO/.venv/bin/python"

need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
[ -f /usr/include/x86_64-linux-gnu/curl/curl.h ] || [ -f /usr/include/curl/curl.h ] || need+=(libcurl4-openssl-dev)
if [ "${#need[@]}" -gt 0 ]; then
    echo "[refs] installing ${need[*]} from Debian"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

(cd "$REPO" && cargo build --release --quiet --features cli --lib --bin zarrshard)
OUT="$REPO/target/refs"
mkdir -p "$OUT"
cc -std=c99 -Wall -Wextra -Werror -pedantic -O2 -g -I"$REPO/include" \
    "$REPO/examples-c/http_read.c" -o "$OUT/http_read" \
    "$REPO/target/release/libzarrshard.a" -lcurl -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc

status=0
echo "== refs: fsspec ReferenceFileSystem + zarr-python read zarrshard refs sets"
"$PY" "$REPO/tests/legacy/legacy_formats.py" write "$OUT/legacy-fixtures" >"$OUT/legacy-fixtures.log"
"$PY" "$REPO/tests/refs/check_refs.py" "$FIX" "$REPO/target/release/zarrshard" \
    --legacy "$OUT/legacy-fixtures" || status=1
"$PY" "$REPO/tests/refs/check_edge_refs.py" "$REPO/target/release/zarrshard" || status=1
echo "== refs: examples-c/http_read over nginx (libcurl range requests)"
"$PY" "$REPO/tests/refs/check_http_read.py" "$FIX" "$OUT/http_read" || status=1
exit $status
