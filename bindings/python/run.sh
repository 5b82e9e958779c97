#!/usr/bin/env bash
# The Python package (bindings/python), end to end:
#
#   0. tools: nginx (serves arrays over http:// to test_http.py) and a C compiler, from apt when
#      missing
#   1. the venv .venv-python (scripts/venv.sh python: cffi, setuptools, numpy, zarr-python,
#      zarrs, tensorstore, dask + distributed, s3fs, moto[server], pytest)
#   2. `pip install ./bindings/python` into it, as a user does: pip builds the package in
#      isolation (setuptools and cffi from PyPI), which builds the library with cargo and
#      puts libzarrshard.so.0 inside the package; then the installed copy is imported from
#      outside the source tree and must load the library inside it
#   3. pytest, one step per file of bindings/python/tests: the API against numpy and
#      zarr-python (test_api.py), http:// from nginx with requests counted in its access log
#      (test_http.py), Dask on a two-process LocalCluster (test_dask.py), S3 on a
#      moto server on loopback started and stopped by the tests (test_s3.py), each bounded
#      by a timeout
#
# Logs in target/bindings/python/logs/. One PASS/FAIL line per step, then `N passed, M failed`
# (the tests pytest ran, and the other steps) alone on the last line; exit status 0 only when
# nothing failed. Idempotent.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
cd "$REPO"
OUT="$REPO/target/bindings/python"
LOGS="$OUT/logs"
mkdir -p "$OUT" "$LOGS"
PY="$REPO/.venv-python/bin/python"
passed=0
failed=0

# step NAME COMMAND...: COMMAND's output in $LOGS/NAME.log; a pytest run counts its tests.
step() {
    local name="$1"
    shift
    local log="$LOGS/$name.log" t0=$SECONDS ok=0 p f
    "$@" >"$log" 2>&1 || ok=$?
    p=$(grep -oE '[0-9]+ passed' "$log" | tail -n 1 | grep -oE '[0-9]+')
    f=$(grep -oE '[0-9]+ (failed|error)' "$log" | awk '{s+=$1} END {print s+0}')
    if [ -n "$p" ]; then
        passed=$((passed + p))
        failed=$((failed + f))
        [ "$ok" -ne 0 ] && [ "$f" -eq 0 ] && failed=$((failed + 1))
    elif [ "$ok" -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
    if [ "$ok" -eq 0 ]; then
        echo "PASS $name${p:+ ($p tests)} [$((SECONDS - t0))s]"
    else
        echo "FAIL $name [$((SECONDS - t0))s] -- last lines of $log:"
        tail -n 30 "$log" | sed 's/^/    /'
    fi
}

tools() {
    # nginx serves arrays over http:// to test_http.py; a C compiler builds the cffi module.
    local need=()
    command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
    command -v cc >/dev/null 2>&1 || need+=(gcc)
    if [ "${#need[@]}" -gt 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
    fi
}
step tools tools
step venv "$REPO/scripts/venv.sh" python
install() {
    # The features the other stages build the library with, so cargo reuses that build.
    ZARRSHARD_CARGO_FEATURES=cli "$PY" -m pip install --disable-pip-version-check ./bindings/python || return 1
    # The installed package, not the source tree, and the library it carries.
    (cd "$OUT" && "$PY" -c '
import os, zarrshard, zarrshard._native as n
d = os.path.dirname(zarrshard.__file__)
assert "site-packages" in d, d
assert os.path.isfile(os.path.join(d, "libzarrshard.so.0")), os.listdir(d)
maps = open("/proc/self/maps").read()
assert os.path.join(d, "libzarrshard.so.0") in maps, "libzarrshard.so.0 was not loaded from the package"
print("zarrshard", zarrshard.__version__, "from", d)')
}
step install install

for t in "$HERE"/tests/test_*.py; do
    name="$(basename "$t" .py)"
    # From a directory outside the source tree, so `import zarrshard` is the installed one.
    step "$name" bash -c "cd '$OUT' && timeout 600 '$PY' -m pytest -q -p no:cacheprovider '$t'"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
