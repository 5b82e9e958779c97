#!/usr/bin/env bash
# Validate the Julia binding without a Julia runtime (none can be installed here):
#
#   1. build the static checker (bindings/julia/check, tree-sitter-julia + tree-sitter-c)
#   2. its unit tests, and its self-tests: each tests/*.jl mutation of the package must be
#      flagged exactly as expected, and the unmodified package must be clean
#   3. the static check of ZarrShard/ against include/zarrshard.h
#   4. build libzarrshard, write the zarr-python fixture, build and run calls.c: the C calls
#      ZarrShard/example/example.jl makes, in the same order, against the real library
#   5. zarr-python reads the stack.zarr calls.c wrote through the library's stores
#      (read_stack.py, its expected values computed from the steps' definition)
#   6. README.md's Julia quick start, the ```julia block between <!-- quickstart-julia --> and
#      <!-- /quickstart-julia -->: at most 30 lines; the checker run over a copy of the package
#      with the block added as example/quickstart.jl (it must parse and leave every check
#      clean), and every function it calls exported by ZarrShard, a Base function the package
#      adds methods to, or one of a few plain Base functions (QS_BASE below). The checker
#      works on a package, not a lone file; no Julia runs it (none can be installed here)
#
# One PASS/FAIL line per step, logs in bindings/julia/build/, last line "N passed, M failed"
# (steps). Exit status 1 if any step failed. Idempotent; needs cargo, gcc and python3 (the
# venv is made by scripts/venv.sh when missing).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BUILD="$HERE/build"
CHECK="$HERE/check"
# Cargo's default target directories (the checker's own, the repo's): ignore a global override.
unset CARGO_TARGET_DIR
CHECKER="$CHECK/target/release/zarrshard-julia-check"
HEADER="$REPO/include/zarrshard.h"
mkdir -p "$BUILD"
passed=0
failed=0

pass() { echo "PASS $*"; passed=$((passed + 1)); }
fail() {
    local log="$1"; shift
    echo "FAIL $*"
    [ -n "$log" ] && [ -f "$log" ] && tail -n 25 "$log" | sed 's/^/    /'
    failed=$((failed + 1))
}
# The closing line of a step's log, quoted inside that step's PASS line (so only this
# script's last line starts with "N passed, M failed", the form suite runners count).
tally() { grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1; }

start=$(date +%s)

# 1. The checker.
checker_ok=0
if cargo build --release --quiet --manifest-path "$CHECK/Cargo.toml" > "$BUILD/checker-build.log" 2>&1; then
    pass "build checker"
    checker_ok=1
else
    fail "$BUILD/checker-build.log" "build checker"
fi

# 2. Unit tests (the C <-> Julia type table) and self-tests (negative snippets).
if [ $checker_ok -eq 1 ] && cargo test --release --quiet --manifest-path "$CHECK/Cargo.toml" > "$BUILD/checker-unit.log" 2>&1; then
    pass "checker unit tests ($(grep -hoE '[0-9]+ passed; [0-9]+ failed' "$BUILD/checker-unit.log" | head -n 1))"
else
    fail "$BUILD/checker-unit.log" "checker unit tests"
fi
if [ $checker_ok -eq 1 ] && "$CHECKER" --self-test "$CHECK/tests" --header "$HEADER" "$HERE/ZarrShard" > "$BUILD/self-test.log" 2>&1; then
    pass "checker self-tests: every bad snippet flagged, nothing else ($(tally "$BUILD/self-test.log"))"
else
    fail "$BUILD/self-test.log" "checker self-tests"
fi

# 3. The real check.
if [ $checker_ok -eq 1 ] && "$CHECKER" --verbose --header "$HEADER" "$HERE/ZarrShard" > "$BUILD/check.log" 2>&1; then
    pass "static check of ZarrShard.jl against zarrshard.h ($(tally "$BUILD/check.log"))"
else
    fail "$BUILD/check.log" "static check of ZarrShard.jl against zarrshard.h"
fi

# 4. calls.c against the real library and the zarr-python fixture.
lib_ok=0
if (cd "$REPO" && cargo build --release --features cli --lib --quiet) > "$BUILD/lib-build.log" 2>&1 && [ -f "$REPO/target/release/libzarrshard.a" ]; then
    pass "build libzarrshard"
    lib_ok=1
else
    fail "$BUILD/lib-build.log" "build libzarrshard"
fi

fixture_ok=0
PY="$REPO/.venv/bin/python"
{
    [ -x "$PY" ] || "$REPO/scripts/venv.sh"
    rm -rf "$BUILD/fixture"
    "$PY" "$REPO/bindings/make_fixture.py" "$BUILD/fixture"
} > "$BUILD/fixture.log" 2>&1
if [ -f "$BUILD/fixture/fixture.raw" ] && [ -f "$BUILD/fixture/fixture.zarr/zarr.json" ]; then
    pass "zarr-python fixture (bindings/make_fixture.py)"
    fixture_ok=1
else
    fail "$BUILD/fixture.log" "zarr-python fixture (bindings/make_fixture.py)"
fi

calls_ok=0
if [ $lib_ok -eq 1 ] && gcc -std=c99 -Wall -Wextra -Werror -O2 -g -I"$REPO/include" "$HERE/calls.c" \
        "$REPO/target/release/libzarrshard.a" -lpthread -ldl -lm -o "$BUILD/calls" > "$BUILD/calls-build.log" 2>&1; then
    pass "build calls.c (-std=c99 -Wall -Wextra -Werror)"
    calls_ok=1
else
    fail "$BUILD/calls-build.log" "build calls.c (-std=c99 -Wall -Wextra -Werror)"
fi

if [ $calls_ok -eq 1 ] && [ $fixture_ok -eq 1 ] &&
        "$BUILD/calls" "$BUILD/fixture" "$HERE/ZarrShard/example/example.jl" > "$BUILD/calls.log" 2>&1; then
    pass "calls.c: the example's C calls read the fixture ($(tally "$BUILD/calls.log"))"
else
    fail "$BUILD/calls.log" "calls.c: the example's C calls read the fixture"
fi

# 5. zarr-python reads the stack calls.c wrote through the library's stores (create from a
#    spec, append, resize, attributes, compact): values computed independently in the script.
if [ $calls_ok -eq 1 ] && [ $fixture_ok -eq 1 ] && [ -d "$BUILD/fixture/stack.zarr" ] &&
        "$PY" "$HERE/read_stack.py" "$BUILD/fixture" > "$BUILD/read-stack.log" 2>&1; then
    pass "zarr-python reads calls.c's stack.zarr ($(tally "$BUILD/read-stack.log"))"
else
    fail "$BUILD/read-stack.log" "zarr-python reads calls.c's stack.zarr"
fi

# 6. README's Julia quick start, as a reader copies it. Without Julia the most that can be
#    checked is that it parses, that the package with it added still passes every check, and
#    that what it calls exists (names only: not arities, keywords or types).
QS="$BUILD/quickstart"
QS_BASE="println print fill zeros ones collect reshape length sum UInt8 UInt16 Int32 Float32 Float64"
quickstart() (
    rm -rf "$QS" && mkdir -p "$QS"
    cp -r "$HERE/ZarrShard" "$QS/ZarrShard"
    local jl="$QS/ZarrShard/example/quickstart.jl"
    bash "$REPO/scripts/readme-block.sh" julia julia "$jl" || return 1
    grep -qx 'using ZarrShard' "$jl" || { echo "the quick start does not say \`using ZarrShard\`"; return 1; }
    "$CHECKER" --verbose --header "$HEADER" "$QS/ZarrShard" >"$QS/check.log" 2>&1
    local rc=$?
    grep -E 'quickstart|FAIL|failed' "$QS/check.log"
    [ $rc -eq 0 ] || return 1
    grep -q 'example/quickstart.jl.*parses without error' "$QS/check.log" ||
        { echo "the checker did not parse example/quickstart.jl"; return 1; }
    local exported extended name bad=0
    exported=" $(awk '/^export / {on = 1} on {print} on && !/,[[:space:]]*$/ {on = 0}' \
        "$HERE/ZarrShard/src/ZarrShard.jl" | sed 's/^export//' | tr ',\n' '  ' | tr -s ' ') "
    extended=" $(grep -ohE '^(function )?Base\.[A-Za-z_][A-Za-z0-9_!]*\(' "$HERE"/ZarrShard/src/*.jl |
        sed -E 's/^(function )?Base\.//; s/\($//' | sort -u | tr '\n' ' ') "
    for name in $(sed 's/#.*//' "$jl" | grep -oE '[A-Za-z_][A-Za-z0-9_!]*\(' | tr -d '(' | sort -u); do
        if [[ "$exported" == *" $name "* ]]; then echo "ok   $name: exported by ZarrShard"
        elif [[ "$extended" == *" $name "* ]]; then echo "ok   $name: Base.$name, with the package's methods"
        elif [[ " $QS_BASE " == *" $name "* ]]; then echo "ok   $name: Base"
        else echo "FAIL $name: neither exported by ZarrShard nor a Base function the package extends"; bad=1
        fi
    done
    [ $bad -eq 0 ]
)
if [ $checker_ok -eq 1 ] && quickstart > "$BUILD/quickstart.log" 2>&1; then
    pass "README's Julia quick start: parses, checked with the package, names exist"
else
    fail "$BUILD/quickstart.log" "README's Julia quick start"
fi

echo "julia binding: $(( $(date +%s) - start )) s, logs in ${BUILD#"$REPO"/}/"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
