#!/usr/bin/env bash
# The Java binding, end to end:
#
#   1. tools: a JDK (javac), gcc and junit4 from apt when missing (idempotent)
#   2. the library (cargo build --release)
#   3. the interop fixture written by zarr-python (bindings/make_fixture.py; scripts/venv.sh
#      first when .venv is missing)
#   4. the JNI shim, bindings/java/native/zarrshard_jni.c -> libzarrshard_jni.so, with
#      -Wall -Wextra -Werror, linked with the static libzarrshard.a and --no-undefined
#   5. the Java classes (javac --release 17 -Xlint:all -Werror): library, tests, example;
#      javadoc -Xdoclint:all -Werror over the library (every public API documented)
#   6. the JUnit 4 tests
#   7. the same tests under -Xcheck:jni: must pass and print no JNI warning
#   8. the kerchunk reference sets the tests wrote (JSON v1 and Parquet, ShardArray's
#      kerchunkRefs, kerchunkRefsParquet through a store and kerchunkRefsParquetDir into a
#      directory, over the fixture) read back through fsspec's ReferenceFileSystem and
#      zarr-python, equal to fixture.raw
#   9. the array DirectoryStoreTest created in the library's directory store (Store.directory;
#      the fixture's zarr.json and values) read by zarr-python, equal to fixture.raw
#  10. the group and appended array CreateTest wrote (Group.create, ShardArray.create with an
#      ArraySpec, append, setAttributes) read by zarr-python: attributes, dimension names, values
#  11. the example (bindings/java/example/Example.java), and zarr-python reading its array
#  12. README.md's Java quick start, the ```java block between <!-- quickstart-java --> and
#      <!-- /quickstart-java -->: at most 30 lines, a whole class QuickStart with main,
#      compiled as the example is and run in an empty directory, as a reader copies it
#
# Everything it builds goes to target/bindings/java/ (logs in target/bindings/java/logs/).
# One PASS/FAIL line per step; last a line `N passed, M failed` (steps); exit status 0 only
# when nothing failed. The JUnit steps echo the runner's own `N passed, M failed` line.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
SRC="$REPO/bindings/java"
OUT="$REPO/target/bindings/java"
LOGS="$OUT/logs"
mkdir -p "$OUT" "$LOGS"
passed=0
failed=0

# step NAME COMMAND...: run COMMAND with its output in $LOGS/NAME.log; one line of result.
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
        detail="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)"
        echo "FAIL $name${detail:+ ($detail)} [$((SECONDS - t0))s] -- last lines of $log:"
        tail -n 30 "$log" | sed 's/^/    /'
    fi
}

JUNIT_JAR=/usr/share/java/junit4.jar
HAMCREST_JAR=/usr/share/java/hamcrest-core.jar

# ---- 1. tools ------------------------------------------------------------------------------

install_tools() {
    local missing=()
    command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
    command -v gcc >/dev/null 2>&1 || missing+=(gcc)
    [ -f "$JUNIT_JAR" ] && [ -f "$HAMCREST_JAR" ] || missing+=(junit4)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing: ${missing[*]}"
        if [ "$(id -u)" -ne 0 ]; then
            echo "not root: install ${missing[*]} yourself" >&2
            return 1
        fi
        # A stale package index is the usual reason an install fails; update once and retry.
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" ||
            { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
                --no-install-recommends "${missing[@]}"; } || return 1
    else
        echo "all tools present"
    fi
    javac -version && java -version && gcc --version | head -n 1 && ls "$JUNIT_JAR" "$HAMCREST_JAR"
}
step tools install_tools

# JAVA_HOME from the javac on the PATH (its include/ has jni.h).
JDK="${JAVA_HOME:-}"
if [ -z "$JDK" ] || [ ! -f "$JDK/include/jni.h" ]; then
    JDK="$(dirname "$(dirname "$(readlink -f "$(command -v javac 2>/dev/null || echo /usr/bin/javac)")")")"
fi

# ---- 2. the library -------------------------------------------------------------------------

LIBZS="$REPO/target/release/libzarrshard.a"
build_library() {
    cargo build --release --features cli && [ -f "$LIBZS" ] && [ -f "$REPO/include/zarrshard.h" ]
}
step build-library build_library

# ---- 3. the interop fixture -----------------------------------------------------------------

FIXTURE="$OUT/fixture"
make_fixture() {
    if [ ! -x "$REPO/.venv/bin/python" ]; then
        "$REPO/scripts/venv.sh" || return 1
    fi
    rm -rf "$FIXTURE"
    "$REPO/.venv/bin/python" "$REPO/bindings/make_fixture.py" "$FIXTURE" &&
        [ -f "$FIXTURE/fixture.raw" ] && [ -f "$FIXTURE/fixture.zarr/zarr.json" ]
}
step fixture make_fixture

# ---- 4. the JNI shim ------------------------------------------------------------------------

LIBDIR="$OUT/lib"
build_jni() (
    mkdir -p "$LIBDIR"
    set -x
    # --exclude-libs: the Rust library's symbols stay private to the shim, so another copy
    # of libzarrshard in the same process cannot clash with it. --no-undefined: a missing
    # system library fails here, not at System.loadLibrary.
    gcc -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -shared \
        -I"$JDK/include" -I"$JDK/include/linux" -I"$REPO/include" \
        "$SRC/native/zarrshard_jni.c" -o "$LIBDIR/libzarrshard_jni.so" \
        "$LIBZS" -lpthread -ldl -lm \
        -Wl,--no-undefined -Wl,--exclude-libs,ALL -Wl,--gc-sections
)
step build-jni build_jni

# ---- 5. the Java classes --------------------------------------------------------------------

CLASSES="$OUT/classes"
TEST_CLASSES="$OUT/test-classes"
EXAMPLE_CLASSES="$OUT/example-classes"
TEST_CP="$CLASSES:$TEST_CLASSES:$JUNIT_JAR:$HAMCREST_JAR"
build_java() (
    rm -rf "$CLASSES" "$TEST_CLASSES" "$EXAMPLE_CLASSES"
    mkdir -p "$CLASSES" "$TEST_CLASSES" "$EXAMPLE_CLASSES"
    set -x
    javac --release 17 -Xlint:all -Werror -d "$CLASSES" \
        $(find "$SRC/src/main/java" -name '*.java' | sort) &&
    javac --release 17 -Xlint:all -Xlint:-serial -Werror -cp "$CLASSES:$JUNIT_JAR:$HAMCREST_JAR" \
        -d "$TEST_CLASSES" $(find "$SRC/src/test/java" -name '*.java' | sort) &&
    javac --release 17 -Xlint:all -Werror -cp "$CLASSES" -d "$EXAMPLE_CLASSES" \
        "$SRC/example/Example.java"
)
step build-java build_java

# Every public class, method and constant has a doc comment with its parameters, result and
# exceptions: javadoc's doclint, every warning an error.
build_javadoc() (
    rm -rf "$OUT/javadoc"
    set -x
    javadoc -quiet -Xdoclint:all -Xmaxwarns 10000 -Werror -d "$OUT/javadoc" \
        $(find "$SRC/src/main/java" -name '*.java' | sort)
)
step javadoc build_javadoc

# ---- 6, 7. the tests ------------------------------------------------------------------------

# zarrshard.cli: RefsTest compares the Parquet objects with the command-line tool's; it writes
# the reference sets it made to zarrshard.refs.out for step 8. DirectoryStoreTest writes the
# fixture's array through Store.directory to zarrshard.dirstore.out for step 9; CreateTest its
# acquisition group to zarrshard.create.out for step 10.
REFS_OUT="$OUT/refs-out"
DIRSTORE_OUT="$OUT/dirstore-out/fixture.zarr"
CREATE_OUT="$OUT/create-out/acq.zarr"
JAVA_PROPS=(-Djava.library.path="$LIBDIR" -Dzarrshard.fixture="$FIXTURE"
    -Dzarrshard.test.tmp="$OUT/tmp" -Dzarrshard.cli="$REPO/target/release/zarrshard"
    -Dzarrshard.refs.out="$REFS_OUT" -Dzarrshard.dirstore.out="$DIRSTORE_OUT"
    -Dzarrshard.create.out="$CREATE_OUT")
run_tests() {
    rm -rf "$OUT/tmp" "$REFS_OUT" "$OUT/dirstore-out" "$OUT/create-out"
    java "${JAVA_PROPS[@]}" -cp "$TEST_CP" io.zarrshard.TestMain
}
step test run_tests

run_tests_checkjni() {
    local log="$OUT/checkjni-output.log" rc
    rm -rf "$OUT/tmp" "$REFS_OUT" "$OUT/dirstore-out" "$OUT/create-out"
    java -Xcheck:jni "${JAVA_PROPS[@]}" -cp "$TEST_CP" io.zarrshard.TestMain >"$log" 2>&1
    rc=$?
    cat "$log"
    [ $rc -eq 0 ] || return $rc
    # -Xcheck:jni reports problems as "WARNING in native method: ...", "WARNING: JNI local
    # refs: ...", or "FATAL ERROR in native method: ..." (and aborts).
    if grep -nE 'WARNING|FATAL ERROR|JNI local refs' "$log"; then
        echo "-Xcheck:jni printed the warnings above"
        return 1
    fi
    echo "-Xcheck:jni: no warnings"
}
step test-xcheck-jni run_tests_checkjni

# ---- 8. the reference sets, read by fsspec and zarr-python -------------------------------------

# What a reader of the sets Java wrote sees: the fixture's values through byte-range reads of
# its shards (JSON v1 with Zarr v3 metadata; Parquet with Zarr v2 metadata, 5 rows per file,
# read with fastparquet, fsspec's default engine).
check_refs() {
    "$REPO/.venv/bin/python" - "$REFS_OUT" "$FIXTURE" <<'PY'
import json, os, sys, warnings
import numpy as np
import pandas as pd
import zarr
from fsspec.implementations.reference import ReferenceFileSystem
from zarr.storage import FsspecStore

# pandas deprecates fastparquet, which fsspec's LazyReferenceMapper still reads with.
warnings.filterwarnings("ignore", message=".*fastparquet.*")
out, fixture = sys.argv[1], sys.argv[2]
want = np.frombuffer(open(os.path.join(fixture, "fixture.raw"), "rb").read(), "<u2").reshape(64, 64)

def read(path, name, zarr_format):
    fs = ReferenceFileSystem(path, asynchronous=True, remote_protocol="file")
    store = FsspecStore(fs, read_only=True, path=name)
    return zarr.open_array(store=store, mode="r", zarr_format=zarr_format)[...]

got = read(os.path.join(out, "refs.json"), "", 3)
assert got.dtype == np.uint16 and (got == want).all(), "JSON v1: values differ from fixture.raw"
print("JSON v1 (Zarr v3): 64x64 values equal to fixture.raw")

# refs.parq: kerchunkRefsParquet's objects copied out of a MemoryShardStore; refs-dir.parq:
# the files kerchunkRefsParquetDir wrote itself.
for set_name in ("refs.parq", "refs-dir.parq"):
    pq = os.path.join(out, set_name)
    assert sorted(os.listdir(pq)) == [".zmetadata", "fx"], (set_name, os.listdir(pq))
    zmeta = json.load(open(os.path.join(pq, ".zmetadata")))
    assert zmeta["record_size"] == 5, zmeta["record_size"]
    files = sorted(os.listdir(os.path.join(pq, "fx")))
    assert files == [f"refs.{n}.parq" for n in range(4)], (set_name, files)
    rows = 0
    for n in range(4):
        df = pd.read_parquet(os.path.join(pq, "fx", f"refs.{n}.parq"), engine="fastparquet")
        assert list(df.columns) == ["path", "offset", "size", "raw"], list(df.columns)
        assert len(df) == (5 if n < 3 else 1), (set_name, n, len(df))
        rows += len(df)
    assert rows == 16
    got = read(pq, "fx", 2)
    assert got.dtype == np.uint16 and (got == want).all(), f"{set_name}: values differ from fixture.raw"
    print(f"Parquet {set_name} (Zarr v2, 4 files of 5, 5, 5, 1 rows): 64x64 values equal to fixture.raw")
PY
}
step refs-fsspec check_refs

# ---- 9. the directory store's array, read by zarr-python ------------------------------------

check_dirstore() {
    "$REPO/.venv/bin/python" - "$DIRSTORE_OUT" "$FIXTURE" <<'PY'
import os, sys
import numpy as np
import zarr
path, fixture = sys.argv[1], sys.argv[2]
want = np.frombuffer(open(os.path.join(fixture, "fixture.raw"), "rb").read(), "<u2").reshape(64, 64)
a = zarr.open_array(path, mode="r")
assert a.dtype == np.uint16 and a.shape == (64, 64), (a.dtype, a.shape)
assert (a[...] == want).all(), "zarr-python reads different values"
shards = sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(os.path.join(path, "c")) for f in fs)
assert shards == ["c/0/0", "c/0/1", "c/1/0", "c/1/1"], shards
print("zarr-python reads the array created in Store.directory: equal to fixture.raw")
PY
}
step dirstore-zarr-python check_dirstore

# ---- 10. the created group and appended array, read by zarr-python ----------------------------

# The values are computed here from their definition (CreateTest.frame: frame t, element
# (y, x) = t * 100 + y * 8 + x + 1), not copied from the Java side.
check_created() {
    "$REPO/.venv/bin/python" - "$CREATE_OUT" <<'PY'
import sys
import numpy as np
import zarr
root = zarr.open_group(sys.argv[1], mode="r")
assert dict(root.attrs) == {"ome": {"version": "0.5", "name": "acq"}}, dict(root.attrs)
a = root["0"]
assert a.dtype == np.uint16 and a.shape == (5, 8, 8), (a.dtype, a.shape)
assert tuple(a.metadata.dimension_names) == ("t", "y", "x"), a.metadata.dimension_names
assert dict(a.attrs) == {"frames": 5}, dict(a.attrs)
t, y, x = np.indices((5, 8, 8))
want = (t * 100 + y * 8 + x + 1).astype("uint16")
assert (a[...] == want).all(), "zarr-python reads different values"
print("zarr-python reads CreateTest's group (attributes) and appended array 0: 5x8x8, equal")
PY
}
step created-zarr-python check_created

# ---- 11. the example -------------------------------------------------------------------------

run_example() {
    local dir="$OUT/example-out/example.zarr"
    rm -rf "$OUT/example-out"
    java -Djava.library.path="$LIBDIR" -cp "$CLASSES:$EXAMPLE_CLASSES" Example "$dir" || return 1
    # The array the example wrote, as zarr-python reads it.
    "$REPO/.venv/bin/python" - "$dir" <<'PY'
import sys
import numpy as np
import zarr
a = zarr.open_array(sys.argv[1], mode="r")[...]
r, c = np.indices((64, 64))
want = ((r * 64 + c) % 65536).astype("uint16")
want[(r >= 32) & (c >= 32)] = 0
assert a.dtype == np.uint16 and a.shape == (64, 64), (a.dtype, a.shape)
assert (a == want).all(), "zarr-python reads different values"
import os
shards = sorted(os.path.relpath(os.path.join(d, f), sys.argv[1])
                for d, _, fs in os.walk(os.path.join(sys.argv[1], "c")) for f in fs)
assert shards == ["c/0/0", "c/0/1", "c/1/0"], shards  # the all-fill shard c/1/1 is not stored
print("zarr-python reads the example's array: equal; the all-fill shard not stored")
PY
}
step example run_example

# ---- 12. README's Java quick start ---------------------------------------------------------

# The class a reader copies from README.md, so README cannot drift from the binding. The block
# between the markers is one ```java fence holding the whole class QuickStart.
QS="$OUT/quickstart"
run_quickstart() (
    rm -rf "$QS" && mkdir -p "$QS/src" "$QS/classes" "$QS/run"
    bash "$REPO/scripts/readme-block.sh" java java "$QS/src/QuickStart.java" || return 1
    set -x
    javac --release 17 -Xlint:all -Werror -cp "$CLASSES" -d "$QS/classes" "$QS/src/QuickStart.java" &&
        (cd "$QS/run" && java -Djava.library.path="$LIBDIR" -cp "$CLASSES:$QS/classes" QuickStart) &&
        [ -f "$QS/run/frames.zarr/zarr.json" ]
)
step readme-quickstart run_quickstart

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
