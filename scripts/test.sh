#!/usr/bin/env bash
# The tests, in stages (docs/testing.md):
#
#   scripts/test.sh                 every stage, in order (what CI, .ci/run, runs)
#   scripts/test.sh STAGE...        only those stages, in the order given
#   scripts/test.sh --list          each stage: what it runs, what it installs or builds
#
# Each stage run alone works on a fresh machine: it builds and installs what it needs (the
# venvs, the zarrs peer, the interop fixtures, target/release/zarrshard), reusing what is
# already there. A failing stage does not stop the others. Each stage prints a header and its
# time; at the end a table (stage, seconds, passed, failed, status) and, last, one line
# `all: N passed, M failed`: cargo's `test result:` lines (stage rust) and each suite's closing
# `N passed, M failed` line (the other stages); a stage that fails without a count adds 1
# failed, and the docs stage counts as one test. Exit status 0 only when every stage passed;
# 2 for an unknown stage name. Logs: target/test-logs/STAGE.log.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

STAGES=(rust docs interop refs legacy c tsan fuzz miri bindings-cpp bindings-java bindings-julia python)

# --list: NAME at the start of a line, then indented lines (tests/docs.rs reads the names).
list() {
    cat <<'EOF'
rust            cargo test --release --all-targets --features cli --no-fail-fast (unit,
                integration, property tests), then cargo test --release --features cli --doc
                --no-fail-fast (doctests: README's Rust quick start, the API docs' examples)
                builds: target/release (crates.io dependencies)
docs            RUSTDOCFLAGS="-D warnings" cargo doc --release --no-deps --lib: every public
                item documented, no broken doc link (counts as one test)
                builds: target/doc (release profile: reuses the rust stage's C codec builds)
interop         zarr-python, tensorstore and zarrs write a matrix of arrays (tests/interop/
                write_fixtures.py); check_export, check_import, check_repack, check_dtypes,
                check_region (after tests/region.rs' region_writes_for_the_peers_to_read)
                installs: .venv (scripts/venv.sh, pinned PyPI packages); builds: the zarrs peer
                (tests/interop/zarrs_peer, crates.io, target/zarrs-peer), target/release/zarrshard,
                target/interop-fixtures
refs            tests/refs/run.sh: fsspec + zarr-python read `zarrshard refs` sets (local and
                http:// from nginx); examples-c/http_read
                installs: nginx-light, libcurl4-openssl-dev (apt), .venv; builds: the interop
                fixtures when missing (as interop), target/release/zarrshard
legacy          tests/legacy: an independent Python writer/reader of the older formats and
                zarrshard export/import/repack, both ways
                installs: .venv; builds: target/release/zarrshard, target/legacy-fixtures
c               tests/c/run.sh: examples and C tests (strict C99, C++17), ASan+UBSan, TSan,
                valgrind, install, pkg-config, CMake, README's C quick start, peers reading,
                OME-Zarr, S3 (moto)
                installs: gcc, g++, make, valgrind, pkg-config, cmake, libcurl4-openssl-dev
                (apt), .venv, .venv-ome, .venv-python; builds: libzarrshard, the zarrs peer
tsan            scripts/tsan.sh: the Rust concurrency tests under ThreadSanitizer
                installs: the nightly toolchain + rust-src (rustup); builds: target/tsan
                (-Zbuild-std)
fuzz            scripts/fuzz.sh $FUZZ_SECONDS (default 20): every fuzz target from the committed
                corpus
                installs: cargo-fuzz (cargo install), the nightly toolchain; builds: fuzz/target
miri            scripts/miri.sh: Miri over the core's tests it can run
                installs: the nightly miri and rust-src components; builds: target/miri
bindings-cpp    bindings/cpp/run.sh: the C++ binding's example and tests, plain and ASan+UBSan
                installs: g++ (apt), .venv; builds: libzarrshard, target/bindings/cpp
bindings-java   bindings/java/run.sh: JNI shim, javac/javadoc -Werror, JUnit (also -Xcheck:jni)
                installs: openjdk-17-jdk-headless, junit4 (apt), .venv; builds: libzarrshard,
                target/bindings/java
bindings-julia  bindings/julia/run.sh: the static checker of ZarrShard.jl against the header,
                calls.c against the library (no Julia runtime)
                installs: .venv; builds: bindings/julia/check (crates.io), libzarrshard
python          bindings/python/run.sh: pip install ./bindings/python, pytest (API, http://,
                Dask, S3)
                installs: nginx-light, gcc (apt), .venv-python (scripts/venv.sh python);
                builds: libzarrshard (through pip)
EOF
}

usage() {
    echo "usage: scripts/test.sh [--list] [STAGE...]"
    echo "stages: ${STAGES[*]}"
}

want=()
for a in "$@"; do
    case "$a" in
        --list) list; exit 0 ;;
        -h | --help) usage; exit 0 ;;
        *)
            ok=0
            for s in "${STAGES[@]}"; do [ "$a" = "$s" ] && ok=1; done
            if [ "$ok" -eq 0 ]; then
                echo "scripts/test.sh: unknown stage '$a'; the stages are: ${STAGES[*]}" >&2
                exit 2
            fi
            dup=0
            for w in "${want[@]+"${want[@]}"}"; do [ "$a" = "$w" ] && dup=1; done
            [ "$dup" -eq 1 ] || want+=("$a")
            ;;
    esac
done
[ "${#want[@]}" -gt 0 ] || want=("${STAGES[@]}")

mkdir -p target
LOG="$REPO/target/test-logs"
mkdir -p "$LOG"
PY="$REPO/.venv/bin/python"
BIN="$REPO/target/release/zarrshard"
FIX="$REPO/target/interop-fixtures"

# ---- what stages share: each made when missing, reused otherwise --------------------------

# The interop venv (zarr-python, tensorstore, fsspec, ...): scripts/venv.sh is idempotent.
need_venv() { "$REPO/scripts/venv.sh" >/dev/null; }

# zarrs (the Rust crate, pinned by its own Cargo.lock) as the third peer: tests/interop/zarrs_peer.
need_zarrs_peer() {
    cargo build --release --locked --manifest-path tests/interop/zarrs_peer/Cargo.toml \
        --target-dir "$REPO/target/zarrs-peer" >"$LOG/zarrs-peer-build.log" 2>&1 ||
        { tail -n 20 "$LOG/zarrs-peer-build.log"; echo "building tests/interop/zarrs_peer failed"; return 1; }
}

# target/release/zarrshard, with the features the rust stage tests (so cargo reuses that build).
need_cli() {
    cargo build --release --features cli --bin zarrshard >"$LOG/cli-build.log" 2>&1 ||
        { tail -n 20 "$LOG/cli-build.log"; echo "building target/release/zarrshard failed"; return 1; }
}

# The interop fixtures: written anew when missing or when what writes them changed (the
# writers' scripts, the peer's sources, the venv's pins); the stamp is written last.
fixtures_key() {
    cat tests/interop/write_fixtures.py tests/interop/zarrs_peer.py \
        tests/interop/zarrs_peer/Cargo.lock tests/interop/zarrs_peer/Cargo.toml \
        tests/interop/zarrs_peer/src/* "$REPO/.venv/.requirements.stamp" 2>/dev/null | sha256sum
}
need_fixtures() {
    need_venv && need_zarrs_peer || return 1
    local key
    key="$(fixtures_key)"
    if [ -f "$FIX/.complete" ] && [ "$(cat "$FIX/.complete")" = "$key" ]; then
        echo "interop fixtures: reused ($FIX)"
        return 0
    fi
    rm -rf "$FIX"
    "$PY" tests/interop/write_fixtures.py "$FIX" >"$LOG/fixtures.log" 2>&1 ||
        { cat "$LOG/fixtures.log"; echo "writing the interop fixtures failed"; return 1; }
    echo "$key" >"$FIX/.complete"
    echo "interop fixtures: written ($FIX)"
}

# ---- the stages: each prints its output; its exit status says whether it passed -----------

stage_rust() {
    local s1 s2
    # --no-fail-fast: one failing test binary does not hide the results of the others.
    cargo test --release --all-targets --features cli --no-fail-fast
    s1=$?
    # --all-targets skips doctests: README's Rust quick start (src/lib.rs, ReadmeDoctests) and
    # the API docs' examples.
    cargo test --release --features cli --doc --no-fail-fast
    s2=$?
    [ "$s1" -eq 0 ] && [ "$s2" -eq 0 ]
}

stage_docs() {
    # --release: the C codecs' build scripts ran for the release profile already (rust stage), and
    # rustdoc's output does not depend on the profile; in the dev profile they compile again.
    RUSTDOCFLAGS="-D warnings" cargo doc --release --no-deps --lib 2>&1 | tail -n 20
    return "${PIPESTATUS[0]}"
}

stage_interop() {
    # The region arrays come from one Rust test (counted in the rust stage, so its output
    # goes to a log of its own).
    local region_ok=1 status=0
    cargo test --release --features cli --test region region_writes_for_the_peers_to_read \
        >"$LOG/region-writes.log" 2>&1 || region_ok=0
    need_fixtures && need_cli || return 1
    echo "== interop: zarr-python, tensorstore and zarrs write, zarrshard export reads"
    "$PY" tests/interop/check_export.py "$FIX" "$BIN" || status=1
    echo "== interop: zarrshard import writes (each strategy), zarr-python, tensorstore and zarrs read"
    "$PY" tests/interop/check_import.py "$FIX" "$BIN" 2>&1 | grep -v '^skip '
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    echo "== interop: zarrshard repack rewrites (shard shape; inner codecs + index location; unsharded arrays), zarr-python, tensorstore and zarrs read; zarrshard get"
    "$PY" tests/interop/check_repack.py "$FIX" "$BIN" || status=1
    echo "== interop: data types zarr-python writes in object form (raw_bytes, null_terminated_bytes, fixed_length_utf32, numpy.datetime64/timedelta64, structured): export, import, repack; vlen string refused"
    "$PY" tests/interop/check_dtypes.py "$REPO/target/tmp/dtypes-interop" "$BIN" || status=1
    echo "== regions: zarrshard's region writes (tests/region.rs), zarr-python, tensorstore and zarrs read"
    if [ "$region_ok" -eq 1 ]; then
        "$PY" tests/interop/check_region.py "$REPO/target/tmp/region-interop" || status=1
    else
        tail -n 20 "$LOG/region-writes.log"
        echo "tests/region.rs region_writes_for_the_peers_to_read failed (see $LOG/region-writes.log)"
        status=1
    fi
    return "$status"
}

stage_refs() {
    need_fixtures || return 1
    bash tests/refs/run.sh "$FIX"
}

stage_legacy() {
    need_venv && need_cli || return 1
    local lfix="$REPO/target/legacy-fixtures"
    rm -rf "$lfix"
    "$PY" tests/legacy/legacy_formats.py write "$lfix" >"$LOG/legacy-fixtures.log" 2>&1 ||
        { cat "$LOG/legacy-fixtures.log"; return 1; }
    "$PY" tests/legacy/check_legacy.py "$lfix" "$BIN"
}

stage_c() {
    # What tests/c/run.sh's optional steps read with: .venv (peers read the demo, the quick
    # start, test_nodes' arrays), the zarrs peer, .venv-python (the S3 steps). It makes
    # .venv-ome itself.
    need_venv && need_zarrs_peer || return 1
    "$REPO/scripts/venv.sh" python >/dev/null || return 1
    bash tests/c/run.sh
}

stage_tsan() { bash scripts/tsan.sh; }
stage_fuzz() { bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}"; }
stage_miri() { bash scripts/miri.sh; }
stage_bindings-cpp() { bash bindings/cpp/run.sh; }
stage_bindings-java() { bash bindings/java/run.sh; }
stage_bindings-julia() { bash bindings/julia/run.sh; }
stage_python() { bash bindings/python/run.sh; }

title() {
    case "$1" in
        rust) echo "cargo test (release), then the doctests" ;;
        docs) echo "rustdoc of the library with warnings as errors (broken links; #![deny(missing_docs)] in src/lib.rs)" ;;
        interop) echo "zarr-python, tensorstore and zarrs against zarrshard export/import/repack/get, data types, regions" ;;
        refs) echo "kerchunk references: fsspec + zarr-python read zarrshard refs sets (local, http:// from nginx); examples-c/http_read" ;;
        legacy) echo "older formats: an independent Python writer/reader (tests/legacy) and zarrshard, both ways" ;;
        c) echo "C: examples and C tests (strict C99, C++), ASan+UBSan, TSan, valgrind, install, pkg-config, CMake, S3" ;;
        tsan) echo "Rust under ThreadSanitizer: nightly, -Zbuild-std (scripts/tsan.sh)" ;;
        fuzz) echo "every target of fuzz/ for ${FUZZ_SECONDS:-20} s from the committed corpus (longer: scripts/fuzz.sh 600)" ;;
        miri) echo "the core's tests that Miri can run (no C codecs)" ;;
        bindings-*) echo "bindings: ${1#bindings-}" ;;
        python) echo "bindings: python (pip install ./bindings/python, pytest)" ;;
    esac
}

# count STAGE: "PASSED FAILED" from its log. The rust stage: cargo's `test result:` lines;
# the others: their suites' closing lines (an inner cargo's `test result:` lines, as miri and
# tsan print, are already in those).
count() {
    local log="$LOG/$1.log" results
    if [ "$1" = rust ]; then
        results="$(grep -hoE '^test result: [A-Za-z]+\. [0-9]+ passed; [0-9]+ failed' "$log")"
    else
        results="$(grep -hE '^[0-9]+ passed, [0-9]+ failed$' "$log")"
    fi
    echo "$(echo "$results" | grep -oE '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')" \
        "$(echo "$results" | grep -oE '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')"
}

rows=()
total_passed=0
total_failed=0
all_ok=1
for s in "${want[@]}"; do
    echo
    echo "=== stage $s: $(title "$s")"
    t0=$SECONDS
    "stage_$s" 2>&1 | tee "$LOG/$s.log"
    rc=${PIPESTATUS[0]}
    secs=$((SECONDS - t0))
    read -r p f < <(count "$s")
    status=pass
    if [ "$rc" -ne 0 ] || [ "$f" -gt 0 ]; then
        status=FAIL
        [ "$f" -gt 0 ] || f=1 # failed without a count
    elif [ "$s" = docs ]; then
        p=1
    elif [ "$p" -eq 0 ] && grep -qE '^SKIP ' "$LOG/$s.log"; then
        status=skip
    fi
    [ "$status" = FAIL ] && all_ok=0
    total_passed=$((total_passed + p))
    total_failed=$((total_failed + f))
    rows+=("$(printf '%-15s %7s %7s %7s  %s' "$s" "$secs" "$p" "$f" "$status")")
    echo "=== stage $s: $status, $p passed, $f failed, ${secs} s (log: target/test-logs/$s.log)"
done

echo
printf '%-15s %7s %7s %7s  %s\n' stage seconds passed failed status
printf '%s\n' "${rows[@]}"
echo "all: $total_passed passed, $total_failed failed"
[ "$all_ok" -eq 1 ] && [ "$total_failed" -eq 0 ]
