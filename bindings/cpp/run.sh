#!/usr/bin/env bash
# The C++ binding (bindings/cpp), end to end:
#
#   1. tools: g++ from apt when missing
#   2. the library (cargo build --release)
#   3. the zarr-python interop fixture (bindings/make_fixture.py; scripts/venv.sh first when
#      .venv is missing)
#   4. example and tests built with -std=c++17 -Wall -Wextra -Werror -pedantic, plain (-O2)
#      and with -fsanitize=address,undefined (leak detection on, UB fatal)
#   5. both variants run: the example, then the tests (fixture + scratch directory), then
#      the Parquet reference sets the tests wrote (SCRATCH/refs-parquet, copied out of a
#      MemoryStore, and SCRATCH/refs-parquet-dir, written by kerchunk_refs_parquet_dir) read
#      back with fastparquet, fsspec's ReferenceFileSystem and zarr-python
#      (tests/check_parquet_refs.py), and the hierarchy the tests wrote through the library's
#      directory store (SCRATCH/py.zarr: a group, arrays appended to, resized, with attributes)
#      read with zarr-python (tests/check_zarr_python.py)
#   6. README.md's C++ quick start, the ```cpp block between <!-- quickstart-cpp --> and
#      <!-- /quickstart-cpp -->: at most 30 lines, a whole program, built with the flags above
#      (plain) and run in an empty directory, as a reader copies it
#
# Everything it builds or writes goes to target/bindings/cpp/ (logs in .../logs). One
# PASS/FAIL line per step, then `N passed, M failed` alone on the last line; exit status 0
# only when nothing failed. Idempotent.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
cd "$REPO"
OUT="$REPO/target/bindings/cpp"
LOGS="$OUT/logs"
mkdir -p "$OUT" "$LOGS"
START=$SECONDS
passed=0
failed=0

# step NAME COMMAND...: run COMMAND with its output in $LOGS/NAME.log; one line of result.
# A test program's closing `N passed, M failed` line is echoed on the PASS/FAIL line.
step() {
    local name="$1"
    shift
    local log="$LOGS/$name.log" t0=$SECONDS detail
    if "$@" >"$log" 2>&1; then
        passed=$((passed + 1))
        detail="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)"
        echo "PASS $name${detail:+ ($detail)} [$((SECONDS - t0))s]"
    else
        failed=$((failed + 1))
        echo "FAIL $name [$((SECONDS - t0))s] -- last lines of $log:"
        tail -n 25 "$log" | sed 's/^/    /'
    fi
}

install_tools() {
    if command -v g++ >/dev/null 2>&1; then
        g++ --version | head -n 1
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "g++ is missing and this is not root: install g++ yourself" >&2
        return 1
    fi
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends g++
}
step tools install_tools

LIBZS="$REPO/target/release/libzarrshard.a"
build_library() {
    cargo build --release --features cli --lib && [ -f "$LIBZS" ] && [ -f "$REPO/include/zarrshard.h" ]
}
step build-library build_library

FIXTURE="$OUT/fixture"
make_fixture() {
    if [ ! -x "$REPO/.venv/bin/python" ] || ! "$REPO/.venv/bin/python" -c 'import zarr' 2>/dev/null; then
        "$REPO/scripts/venv.sh" || return 1
    fi
    rm -rf "$FIXTURE"
    "$REPO/.venv/bin/python" "$REPO/bindings/make_fixture.py" "$FIXTURE" &&
        [ -f "$FIXTURE/fixture.zarr/zarr.json" ] && [ -f "$FIXTURE/fixture.raw" ]
}
step fixture make_fixture

STRICT=(-std=c++17 -Wall -Wextra -Werror -pedantic -g -pthread)
INC=(-I"$REPO/include" -I"$HERE")
LIBS=("$LIBZS" -lpthread -ldl -lm)
SAN=(-O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)

# build VARIANT FLAGS...: example and test_zarrshard into $OUT/VARIANT/.
build() (
    local dir="$OUT/$1"
    shift
    mkdir -p "$dir"
    set -x
    g++ "${STRICT[@]}" "$@" "${INC[@]}" "$HERE/example.cpp" -o "$dir/example" "${LIBS[@]}" &&
    g++ "${STRICT[@]}" "$@" "${INC[@]}" "$HERE/tests/test_zarrshard.cpp" \
        "$HERE/tests/second_tu.cpp" -o "$dir/test_zarrshard" "${LIBS[@]}"
)

# run_example VARIANT / run_tests VARIANT: in a fresh scratch directory each time.
run_example() {
    local dir="$OUT/$1/example-out"
    rm -rf "$dir" && mkdir -p "$dir" && "$OUT/$1/example" "$dir"
}
run_tests() {
    local dir="$OUT/$1/scratch"
    rm -rf "$dir" && mkdir -p "$dir" && "$OUT/$1/test_zarrshard" "$FIXTURE" "$dir" &&
        [ -z "$(ls -A "$dir" | grep '\.tmp\.')" ] # no temporary left behind
}
# check_parquet VARIANT SUBDIR RECORD_SIZE: a set the tests wrote into SCRATCH/SUBDIR (name
# `fixture`), read by fsspec and zarr-python and compared with fixture.raw:
# refs-parquet (test_array_kerchunk_refs_parquet, record size 3) and refs-parquet-dir
# (test_array_kerchunk_refs_parquet_dir, record size 5).
check_parquet() {
    local dir="$OUT/$1/scratch/$2"
    [ -f "$dir/.zmetadata" ] &&
        "$REPO/.venv/bin/python" "$HERE/tests/check_parquet_refs.py" "$dir" fixture "$FIXTURE" "$3"
}

# check_zarr_python VARIANT: SCRATCH/py.zarr (test_write_for_zarr_python) read by zarr-python.
check_zarr_python() {
    local dir="$OUT/$1/scratch/py.zarr"
    [ -f "$dir/zarr.json" ] && "$REPO/.venv/bin/python" "$HERE/tests/check_zarr_python.py" "$dir"
}

# The two compiles run side by side (the slow part); their logs are reported in order.
build plain -O2 >"$LOGS/build-plain.bg" 2>&1 &
pid_plain=$!
build asan "${SAN[@]}" >"$LOGS/build-asan.bg" 2>&1 &
pid_asan=$!
wait_build() { # wait_build PID LOG
    local rc=0
    wait "$1" || rc=$?
    cat "$2"
    return "$rc"
}
step build-plain wait_build "$pid_plain" "$LOGS/build-plain.bg"
step build-asan wait_build "$pid_asan" "$LOGS/build-asan.bg"

step run-example-plain run_example plain
step run-tests-plain run_tests plain
step check-parquet-refs-plain check_parquet plain refs-parquet 3
step check-parquet-refs-dir-plain check_parquet plain refs-parquet-dir 5
step check-zarr-python-plain check_zarr_python plain
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
step run-example-asan run_example asan
step run-tests-asan run_tests asan
step check-parquet-refs-asan check_parquet asan refs-parquet 3
step check-parquet-refs-dir-asan check_parquet asan refs-parquet-dir 5
step check-zarr-python-asan check_zarr_python asan

# README.md's C++ quick start: the program a reader copies, so README cannot drift from the
# binding. The block between the markers is one ```cpp fence; the program is what it holds.
QS="$OUT/quickstart"
quickstart() (
    rm -rf "$QS" && mkdir -p "$QS/run"
    bash "$REPO/scripts/readme-block.sh" cpp cpp "$QS/quickstart.cpp" || return 1
    set -x
    g++ "${STRICT[@]}" -O2 "${INC[@]}" "$QS/quickstart.cpp" -o "$QS/quickstart" "${LIBS[@]}" &&
        (cd "$QS/run" && "$QS/quickstart") &&
        [ -f "$QS/run/frames.zarr/zarr.json" ]
)
step readme-quickstart quickstart

echo "total $((SECONDS - START))s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
