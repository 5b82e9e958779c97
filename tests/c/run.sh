#!/usr/bin/env bash
# The C side of zarrshard, end to end:
#
#   1. tools: valgrind, pkg-config, cmake (and a C/C++ compiler, make) from apt when missing
#   2. the library (cargo build --release)
#   3. every example and test compiled with -std=c99 -Wall -Wextra -Werror -pedantic, and the
#      headers compiled (and linked) from C++17
#   4. test_capi, test_threads, test_faults, test_region (regions over a host store; also of a
#      zarr-python fixture), test_nodes (the library's stores, arrays at paths, append,
#      resize, groups), the demo (examples-c/write_array) and examples-c/ome_pyramid
#   5. the same built with -fsanitize=address,undefined (leak detection on); test_threads
#      with -fsanitize=thread too
#   6. the same under valgrind: no errors, no definite or indirect leaks; and a program that
#      leaks on purpose, which ASan and valgrind must both flag (so their silence means something)
#   7. scripts/install.sh into a temporary prefix (twice: byte for byte the same files), its
#      libraries stripped (the .so's debug info in a separate file that gdb finds), then C and
#      C++ consumers built with pkg-config (shared and static) and with CMake find_package, run
#      without LD_LIBRARY_PATH
#   8. README's C quick start, taken from README.md between its marker comments, built against
#      the installed library as README says, run plain, under ASan+UBSan and valgrind, and
#      with its store path taken by a file (the error it prints); zarr-python and tensorstore
#      read the arrays it wrote (tests/c/check_quickstart.py)
#   9. zarr-python (and zarrs, when scripts/test.sh has built tests/interop/zarrs_peer) read
#      the demo's array equal to the image it meant, and zarr-python and tensorstore read what
#      test_nodes wrote (when .venv exists; scripts/venv.sh makes it); ome-zarr and
#      ome-zarr-models read examples-c/ome_pyramid's OME-Zarr 0.5 image equal to the pyramid it
#      meant (in .venv-ome, which `scripts/venv.sh ome` makes here)
#  10. S3 (when .venv-python exists; `scripts/venv.sh python` makes it): tests/s3/server.py's
#      own tests (tests/s3/test_server.py, pytest); libcurl's headers
#      (libcurl4-openssl-dev) from apt when missing; tests/c/test_s3.c over examples-c/s3_io.c
#      built plain and with -fsanitize=address,undefined (leak detection on), each run against
#      a moto S3 server that tests/s3/server.py starts and stops, followed under the same
#      server by tests/c/check_s3.py (zarr-python reads the arrays through s3fs). The steps
#      (C_STEPS='.*s3.*') need the library of step 2 built.
#
# One PASS/FAIL line per step, logs in target/c/logs/, and last a line `N passed, M failed`.
# Exit status 0 only when nothing failed. Idempotent; needs the Rust toolchain.
# C_STEPS=REGEX runs only the steps whose whole name matches, e.g.
# C_STEPS='install.*|consumer.*|.*quickstart.*' tests/c/run.sh
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
OUT="$REPO/target/c"
LOGS="$OUT/logs"
mkdir -p "$OUT" "$LOGS"
START=$SECONDS
passed=0
failed=0
failed_steps=()

# selected NAME: whether step NAME runs (C_STEPS unset, or its whole name matches).
selected() {
    [[ -z "${C_STEPS:-}" || "$1" =~ ^(${C_STEPS})$ ]]
}

# step NAME COMMAND...: run COMMAND with its output in $LOGS/NAME.log; one line of result.
# A test program's closing `N passed, M failed` line is echoed on the PASS/FAIL line.
step() {
    local name="$1"
    shift
    selected "$name" || return 0
    local log="$LOGS/$name.log" t0=$SECONDS detail
    if "$@" >"$log" 2>&1; then
        passed=$((passed + 1))
        detail="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)"
        echo "PASS $name${detail:+ ($detail)} [$((SECONDS - t0))s]"
    else
        failed=$((failed + 1))
        failed_steps+=("$name")
        echo "FAIL $name [$((SECONDS - t0))s] -- last lines of $log:"
        tail -n 25 "$log" | sed 's/^/    /'
    fi
}

# ---- 1. tools --------------------------------------------------------------------------

install_tools() {
    local missing=() tool pkg
    for tool in valgrind:valgrind pkg-config:pkg-config cmake:cmake make:make cc:gcc gcc:gcc \
                g++:g++; do
        command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        echo "all tools present"
        return 0
    fi
    echo "installing: ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
        echo "not root: install ${missing[*]} yourself" >&2
        return 1
    fi
    # sort -u: gcc may be listed twice (cc and gcc).
    pkg="$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkg
}
step tools install_tools

# ---- 2. the library ---------------------------------------------------------------------

LIBZS="$REPO/target/release/libzarrshard.a"
NATIVE_FILE="$OUT/native-static-libs"
build_library() {
    cargo build --release --features cli --lib || return 1
    bash scripts/native-static-libs.sh >"$NATIVE_FILE" || return 1
    echo "native libraries: $(cat "$NATIVE_FILE")"
    [ -f "$LIBZS" ] && [ -f include/zarrshard.h ]
}
step build-library build_library
NATIVE="$(cat "$NATIVE_FILE" 2>/dev/null || echo "-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc")"

# ---- 3. strict compiles ----------------------------------------------------------------

STRICT=(-std=c99 -Wall -Wextra -Werror -pedantic)
INC=(-I"$REPO/include" -I"$REPO/examples-c" -I"$REPO/tests/c")
EX="$REPO/examples-c"
TC="$REPO/tests/c"

# build VARIANT EXTRA_FLAGS...: the four programs into $OUT/VARIANT/.
build_programs() (
    local dir="$OUT/$1"
    shift
    mkdir -p "$dir"
    set -x
    gcc "${STRICT[@]}" "$@" "${INC[@]}" "$EX/write_array.c" "$EX/posix_io.c" \
        -o "$dir/write_array" "$LIBZS" $NATIVE &&
    gcc "${STRICT[@]}" "$@" "${INC[@]}" "$TC/test_capi.c" "$EX/mem_io.c" "$EX/posix_io.c" \
        -o "$dir/test_capi" "$LIBZS" $NATIVE &&
    gcc "${STRICT[@]}" "$@" -pthread "${INC[@]}" "$TC/test_threads.c" "$EX/mem_io.c" \
        -o "$dir/test_threads" "$LIBZS" $NATIVE &&
    gcc "${STRICT[@]}" "$@" -pthread "${INC[@]}" "$TC/test_region.c" "$EX/mem_io.c" \
        "$EX/posix_io.c" -o "$dir/test_region" "$LIBZS" $NATIVE &&
    gcc "${STRICT[@]}" "$@" "${INC[@]}" "$TC/test_faults.c" -o "$dir/test_faults" "$LIBZS" $NATIVE &&
    gcc "${STRICT[@]}" "$@" "${INC[@]}" "$TC/test_nodes.c" "$EX/posix_io.c" -o "$dir/test_nodes" \
        "$LIBZS" $NATIVE &&
    gcc "${STRICT[@]}" "$@" "${INC[@]}" "$EX/ome_pyramid.c" -o "$dir/ome_pyramid" "$LIBZS" $NATIVE
)
step compile-c99-strict build_programs plain -O2 -g

compile_cpp() (
    set -x
    g++ -std=c++17 -Wall -Wextra -Werror "${INC[@]}" "$TC/header_cpp.cpp" \
        -o "$OUT/header_cpp" "$LIBZS" $NATIVE && "$OUT/header_cpp"
)
step compile-header-cplusplus compile_cpp

# ---- 4. run ------------------------------------------------------------------------------

DEMO_SIZE=2048
run_demo() { # run_demo PREFIX... : the demo into $OUT/demo-$tag, through PREFIX (a runner)
    local dir="$1" size="$2"
    shift 2
    rm -rf "$dir"
    "$@" "$dir/image.zarr" "$size"
}
# The zarr-python fixture test_region reads (when .venv exists; scripts/venv.sh makes it).
FIXTURE=()
if ! selected test_region && ! selected asan-test_region && ! selected valgrind-test_region; then
    : # no step reads it
elif [ -x "$REPO/.venv/bin/python" ] &&
    "$REPO/.venv/bin/python" "$REPO/bindings/make_fixture.py" "$OUT/fixture" >"$LOGS/fixture.log" 2>&1; then
    FIXTURE=("$OUT/fixture")
    # Its Parquet reference set as `zarrshard refs` writes it, which test_region's C call
    # must reproduce object for object.
    rm -rf "$OUT/fixture-parquet"
    if cargo build --release --features cli --bin zarrshard >>"$LOGS/fixture.log" 2>&1 &&
        "$REPO/target/release/zarrshard" refs "$OUT/fixture/fixture.zarr" --format parquet \
            --url-prefix http://example/fixture.zarr --name fixture --record-size 3 \
            -o "$OUT/fixture-parquet" >>"$LOGS/fixture.log" 2>&1; then
        FIXTURE+=("$OUT/fixture-parquet")
    else
        echo "FAIL making the Parquet reference set of the fixture (see $LOGS/fixture.log)"
    fi
else
    echo "SKIP test_region's zarr-python fixture (no .venv, or see $LOGS/fixture.log)"
fi
step test_capi "$OUT/plain/test_capi"
step test_region "$OUT/plain/test_region" "${FIXTURE[@]}"
step test_threads "$OUT/plain/test_threads"
step test_faults "$OUT/plain/test_faults"
rm -rf "$OUT/nodes"
step test_nodes "$OUT/plain/test_nodes" "$OUT/nodes"
step demo run_demo "$OUT/demo" $DEMO_SIZE "$OUT/plain/write_array"
cp "$LOGS/demo.log" "$OUT/demo.txt" 2>/dev/null
# 10 planes: the last shard layer (planes 8-9) is partial, so flush's edge shards are read too.
OME_SIZE=(10 512 512)
run_ome() { # run_ome DIR Z Y X PROGRAM... : the OME-Zarr image into DIR, made anew
    local dir="$1" z="$2" y="$3" x="$4"
    shift 4
    rm -rf "$dir"
    "$@" "$dir" "$z" "$y" "$x"
}
step ome_pyramid run_ome "$OUT/ome/image.ome.zarr" "${OME_SIZE[@]}" "$OUT/plain/ome_pyramid"

# ---- 5. sanitizers -----------------------------------------------------------------------

SAN=(-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer)
step compile-asan-ubsan build_programs asan "${SAN[@]}"
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
step asan-test_capi "$OUT/asan/test_capi"
step asan-test_threads env ZS_THREAD_ITERS=30 "$OUT/asan/test_threads"
step asan-test_region "$OUT/asan/test_region" "${FIXTURE[@]}"
step asan-test_faults "$OUT/asan/test_faults"
step asan-test_nodes "$OUT/asan/test_nodes"
step asan-demo run_demo "$OUT/demo-asan" $DEMO_SIZE "$OUT/asan/write_array"
step asan-ome_pyramid run_ome "$OUT/ome-asan/image.ome.zarr" "${OME_SIZE[@]}" "$OUT/asan/ome_pyramid"
unset ASAN_OPTIONS UBSAN_OPTIONS

# ThreadSanitizer on the threads test: the C side (test, mem_io callbacks called from many
# threads at once) is instrumented; the Rust library is not, so this checks the host side.
tsan_threads() (
    set -x
    gcc "${STRICT[@]}" -O1 -g -fsanitize=thread -pthread "${INC[@]}" "$TC/test_threads.c" \
        "$EX/mem_io.c" -o "$OUT/asan/test_threads_tsan" "$LIBZS" $NATIVE &&
    # The Rust library is not built with TSan, so TSan cannot see the synchronisation inside
    # its worker pool (rayon) and would report its decoded output as racing with the caller;
    # one worker thread keeps the check about the host-facing API, which is what it tests.
    ZARRSHARD_THREADS=1 ZS_THREAD_ITERS=20 TSAN_OPTIONS=halt_on_error=1 "$OUT/asan/test_threads_tsan"
)
step tsan-test_threads tsan_threads

# ---- 6. valgrind -------------------------------------------------------------------------

VG=(valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99
    --track-origins=yes --quiet)
step valgrind-test_capi "${VG[@]}" "$OUT/plain/test_capi"
step valgrind-test_threads env ZS_THREAD_ITERS=10 "${VG[@]}" "$OUT/plain/test_threads"
step valgrind-test_region "${VG[@]}" "$OUT/plain/test_region" "${FIXTURE[@]}"
step valgrind-test_faults "${VG[@]}" "$OUT/plain/test_faults"
step valgrind-test_nodes "${VG[@]}" "$OUT/plain/test_nodes"
# The full image (1-2 s under valgrind); VALGRIND_DEMO_SIZE=512 makes it smaller.
step valgrind-demo run_demo "$OUT/demo-valgrind" "${VALGRIND_DEMO_SIZE:-$DEMO_SIZE}" \
    "${VG[@]}" "$OUT/plain/write_array"
# Smaller under valgrind (the full size takes about 15 s); 5 planes still end in a partial layer.
step valgrind-ome_pyramid run_ome "$OUT/ome-valgrind/image.ome.zarr" 5 256 256 \
    "${VG[@]}" "$OUT/plain/ome_pyramid"

# Both tools must catch a codec and a handle leaked on purpose.
negative_control() (
    set -x
    gcc "${STRICT[@]}" -O1 -g "${INC[@]}" "$TC/leak_control.c" "$EX/mem_io.c" \
        -o "$OUT/plain/leak_control" "$LIBZS" $NATIVE -pthread &&
    gcc "${STRICT[@]}" "${SAN[@]}" "${INC[@]}" "$TC/leak_control.c" "$EX/mem_io.c" \
        -o "$OUT/asan/leak_control" "$LIBZS" $NATIVE -pthread || return 1
    "$OUT/plain/leak_control" || return 1 # it runs fine: only the leak is wrong
    ASAN_OPTIONS=detect_leaks=1 "$OUT/asan/leak_control" 2>"$OUT/leak_control.asan.txt"
    [ $? -ne 0 ] && grep -q "detected memory leaks" "$OUT/leak_control.asan.txt" || return 1
    "${VG[@]}" "$OUT/plain/leak_control"
    [ $? -eq 99 ]
)
step leak-checkers-negative-control negative_control

# ---- 7. install and consume ----------------------------------------------------------------

PREFIX="$(mktemp -d "${TMPDIR:-/tmp}/zarrshard-prefix.XXXXXX")"
trap 'rm -rf "$PREFIX"' EXIT
install_twice() {
    "$REPO/scripts/install.sh" "$PREFIX" || return 1
    local before after
    # Types, links, sizes, modes and contents.
    prefix_tree() { (cd "$PREFIX" && find . -printf '%y %p %l %s %m\n' | sort && find . -type f -exec md5sum {} + | sort); }
    before="$(prefix_tree)"
    "$REPO/scripts/install.sh" "$PREFIX" || return 1
    after="$(prefix_tree)"
    echo "$after"
    [ "$before" = "$after" ] || { echo "second install changed the tree"; return 1; }
    [ "$(readlink "$PREFIX/lib/libzarrshard.so")" = libzarrshard.so.0 ] &&
    [ -f "$PREFIX/lib/$(readlink "$PREFIX/lib/libzarrshard.so.0")" ] &&
    [ -f "$PREFIX/lib/libzarrshard.a" ] && cmp include/zarrshard.h "$PREFIX/include/zarrshard.h" &&
    cmp bindings/cpp/zarrshard.hpp "$PREFIX/include/zarrshard.hpp" &&
    [ -f "$PREFIX/lib/cmake/zarrshard/zarrshard-config-version.cmake" ]
}
step install install_twice

# The installed libraries carry no debug info (nor the .a LLVM bitcode); the .so names its
# debug file, which holds it.
SO="$PREFIX/lib/libzarrshard.so.0"
install_stripped() {
    local a="$PREFIX/lib/libzarrshard.a" link
    ls -lL "$SO" "$a" "$REPO/target/release/libzarrshard.so" "$REPO/target/release/libzarrshard.a"
    readelf -d "$SO" | grep -F "Library soname: [libzarrshard.so.0]" || { echo "soname?"; return 1; }
    if readelf -SW "$SO" | grep -E '\.z?debug_|\.symtab'; then
        echo "$SO carries debug info or a full symbol table"
        return 1
    fi
    if readelf -SW "$a" | grep -m 3 -E '\.z?debug_|\.llvmbc'; then
        echo "$a carries debug info or LLVM bitcode"
        return 1
    fi
    link="$(readelf -p .gnu_debuglink "$SO" | sed -n 's/^ *\[ *0\] *//p')"
    echo "debug link: $link"
    [ -n "$link" ] && readelf -SW "$PREFIX/lib/.debug/$link" | grep -E '\.z?debug_info'
}
step install-stripped install_stripped

# gdb finds the separate debug info by itself: a line number for an exported function.
debug_info_gdb() {
    local out
    out="$(gdb -nx -batch -ex 'info line shard_version' "$SO" 2>&1)"
    echo "$out"
    grep -qE '^Line [0-9]+ of "src/ffi/' <<<"$out"
}
if command -v gdb >/dev/null 2>&1; then
    step install-debug-info-gdb debug_info_gdb
else
    echo "SKIP install-debug-info-gdb (no gdb)"
fi

export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
consume_pkgconfig() (
    local dir="$OUT/consumer-pkgconfig"
    mkdir -p "$dir"
    set -x
    pkg-config --exists --print-errors zarrshard &&
    gcc "${STRICT[@]}" "$TC/consumer.c" -o "$dir/consumer" $(pkg-config --cflags --libs zarrshard) &&
    # pkg-config's Libs carry the rpath: no LD_LIBRARY_PATH.
    env -u LD_LIBRARY_PATH ldd "$dir/consumer" | grep -F "$PREFIX/lib/libzarrshard.so.0" &&
    env -u LD_LIBRARY_PATH "$dir/consumer" &&
    g++ -std=c++17 -Wall -Wextra -Werror -pedantic "$TC/consumer.cpp" -o "$dir/consumer_cpp" \
        $(pkg-config --cflags --libs zarrshard) &&
    env -u LD_LIBRARY_PATH "$dir/consumer_cpp" &&
    # Static: the archive by name, plus Libs.private.
    gcc "${STRICT[@]}" "$TC/consumer.c" -o "$dir/consumer_static" \
        $(pkg-config --cflags --static --libs zarrshard | sed 's/-lzarrshard\b/-l:libzarrshard.a/') &&
    ! ldd "$dir/consumer_static" | grep -q zarrshard &&
    "$dir/consumer_static"
)
step consumer-pkg-config consume_pkgconfig

consume_cmake() {
    local build="$OUT/consumer-cmake"
    rm -rf "$build"
    cmake -S "$TC/cmake" -B "$build" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$build" &&
    "$build/consumer" && # CMake's build rpath finds the installed .so
    "$build/consumer_cpp" &&
    "$build/consumer_static" && ! ldd "$build/consumer_static" | grep -q zarrshard
}
step consumer-cmake consume_cmake

# ---- 8. README's C quick start ------------------------------------------------------------

# Taken from README.md as a reader copies it, built against the installed library as README
# says (pkg-config), so neither can drift from what the test runs.
QS="$OUT/quickstart"
quickstart_build() (
    rm -rf "$QS"
    mkdir -p "$QS"
    # The one ```c fence between README's quickstart-c markers, at most 30 lines.
    bash "$REPO/scripts/readme-block.sh" c c "$QS/quickstart.c" || return 1
    set -x
    gcc "${STRICT[@]}" -O2 "$QS/quickstart.c" -o "$QS/quickstart" \
        $(pkg-config --cflags --libs zarrshard) &&
    gcc "${STRICT[@]}" "${SAN[@]}" "$QS/quickstart.c" -o "$QS/quickstart-asan" \
        $(pkg-config --cflags --libs zarrshard)
)
step quickstart-build quickstart_build

# quickstart_run TAG RUNNER...: the program in an empty directory $QS/TAG, as a reader runs
# it (no LD_LIBRARY_PATH); its standard output in $QS/TAG.out.
quickstart_run() {
    local tag="$1"
    shift
    rm -rf "$QS/$tag"
    mkdir -p "$QS/$tag"
    (cd "$QS/$tag" && env -u LD_LIBRARY_PATH "$@") >"$QS/$tag.out" || return 1
    cat "$QS/$tag.out"
}
step quickstart quickstart_run plain "$QS/quickstart"
step asan-quickstart quickstart_run asan env ASAN_OPTIONS=detect_leaks=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$QS/quickstart-asan"
step valgrind-quickstart quickstart_run valgrind "${VG[@]}" "$QS/quickstart"

# What a reader sees when a call fails: the store's path is a file. Exit status 1, nothing on
# stdout, one line on stderr with the library's message: its kind and the path.
quickstart_error() {
    rm -rf "$QS/error"
    mkdir -p "$QS/error"
    echo "a file where the array's directory should be" >"$QS/error/frames.zarr"
    local rc=0
    (cd "$QS/error" && env -u LD_LIBRARY_PATH "$QS/quickstart") >"$QS/error.out" \
        2>"$QS/error.err" || rc=$?
    echo "exit status $rc"
    cat "$QS/error.out" "$QS/error.err"
    [ "$rc" -eq 1 ] && [ ! -s "$QS/error.out" ] && [ "$(wc -l <"$QS/error.err")" -eq 1 ] &&
        grep -qxF 'frames: invalid argument: `frames.zarr` is not a directory' "$QS/error.err"
}
step quickstart-error quickstart_error

if [ -x "$REPO/.venv/bin/python" ]; then
    step peers-read-quickstart "$REPO/.venv/bin/python" "$TC/check_quickstart.py" \
        "$QS/plain/frames.zarr" "$QS/plain.out" "$QS/asan/frames.zarr" "$QS/valgrind/frames.zarr"
else
    echo "SKIP peers-read-quickstart (no .venv; scripts/venv.sh creates it)"
fi

# ---- 9. zarr-python and zarrs read the demo --------------------------------------------------

PY="$REPO/.venv/bin/python"
if [ -x "$PY" ]; then
    step peers-read-demo "$PY" "$TC/check_zarr.py" "$OUT/demo/image.zarr" $DEMO_SIZE
    step peers-read-nodes "$PY" "$TC/check_nodes.py" "$OUT/nodes"
else
    echo "SKIP peers-read-demo (no $PY; scripts/venv.sh creates it)"
fi

step venv-ome "$REPO/scripts/venv.sh" ome
if [ -x "$REPO/.venv-ome/bin/python" ]; then
    step ome-zarr-reads-pyramid "$REPO/.venv-ome/bin/python" "$TC/check_ome.py" \
        "$OUT/ome/image.ome.zarr" "${OME_SIZE[@]}"
else
    echo "SKIP ome-zarr-reads-pyramid (no .venv-ome: see $LOGS/venv-ome.log)"
fi

# ---- 10. S3 ------------------------------------------------------------------------------

PYS3="$REPO/.venv-python/bin/python"
install_curl_dev() {
    if echo '#include <curl/curl.h>' | gcc -E -x c - >/dev/null 2>&1; then
        echo "libcurl headers present"
        return 0
    fi
    [ "$(id -u)" -eq 0 ] || { echo "not root: install libcurl4-openssl-dev yourself" >&2; return 1; }
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libcurl4-openssl-dev
}
# build_s3 VARIANT EXTRA_FLAGS...: test_s3 into $OUT/VARIANT/.
build_s3() (
    local dir="$OUT/$1"
    shift
    mkdir -p "$dir"
    set -x
    gcc "${STRICT[@]}" "$@" -pthread "${INC[@]}" "$TC/test_s3.c" "$EX/s3_io.c" \
        -o "$dir/test_s3" "$LIBZS" -lcurl $NATIVE
)
# run_s3 PROGRAM: PROGRAM, then check_s3.py, under one S3 server (the arrays it left behind
# live only as long as the server); at most 5 minutes, the server stopped after it either way.
run_s3() {
    timeout 300 "$PYS3" "$REPO/tests/s3/server.py" run -- \
        bash -c '"$1" && "$2" "$3"' run_s3 "$1" "$PYS3" "$TC/check_s3.py"
}
if [ -x "$PYS3" ]; then
    step s3-server timeout 300 "$PYS3" -m pytest -q -p no:cacheprovider "$REPO/tests/s3/test_server.py"
    step s3-tools install_curl_dev
    step compile-s3 build_s3 plain -O2 -g
    step compile-asan-s3 build_s3 asan "${SAN[@]}"
    step test_s3 run_s3 "$OUT/plain/test_s3"
    export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    step asan-test_s3 run_s3 "$OUT/asan/test_s3"
    unset ASAN_OPTIONS UBSAN_OPTIONS
else
    echo "SKIP the S3 steps (no .venv-python; scripts/venv.sh python creates it)"
fi

echo "tests/c/run.sh: $((SECONDS - START))s${failed_steps[*]:+; failed: ${failed_steps[*]}}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
