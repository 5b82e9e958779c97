#!/usr/bin/env bash
# Build zarrshard (release) and install the C library into PREFIX:
#
#   PREFIX/include/zarrshard.h, zarrshard.hpp                 the C header, the C++17 binding
#   PREFIX/lib/libzarrshard.so.X.Y.Z, libzarrshard.so.X -> it, libzarrshard.so -> .so.X
#   PREFIX/lib/.debug/libzarrshard.so.X.Y.Z.debug             its debug info (compressed)
#   PREFIX/lib/libzarrshard.a
#   PREFIX/lib/pkgconfig/zarrshard.pc                      pkg-config --cflags --libs zarrshard
#   PREFIX/lib/cmake/zarrshard/zarrshard-config.cmake      find_package(zarrshard CONFIG)
#   PREFIX/lib/cmake/zarrshard/zarrshard-config-version.cmake
#
# The libraries are installed stripped: the release build keeps debug info (profiles and
# benchmarks need it), which is most of their size. The .so's debug info goes to a separate
# file that its .gnu_debuglink names; gdb and valgrind look for it there (the library's
# directory's .debug/) with no setting. The .a loses its debug info and its
# embedded LLVM bitcode (only used for cross-language LTO with the same LLVM).
# pkg-config's Libs carry an rpath to PREFIX/lib, so a program built with
# `pkg-config --libs zarrshard` runs without LD_LIBRARY_PATH.
# The CMake package defines zarrshard::zarrshard (shared) and zarrshard::zarrshard_static.
# Static linking needs the system libraries the Rust standard library uses; they are taken
# from rustc (--print native-static-libs) and written to Libs.private and to the static
# target's link interface. Idempotent: running it again writes the same files, byte for byte.
# Needs the Rust toolchain and binutils (strip, objcopy). Prints each file it installs.
#
#   scripts/install.sh PREFIX
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -ne 1 ]; then
    echo "usage: scripts/install.sh PREFIX" >&2
    exit 2
fi
mkdir -p "$1"
PREFIX="$(cd "$1" && pwd)"
cd "$REPO"

# The version from Cargo.toml's [package] section; the soname carries its major number
# (build.rs: -soname libzarrshard.so.MAJOR).
VERSION="$(awk '/^\[package\]/ {p = 1; next} /^\[/ {p = 0}
                p && /^version[ \t]*=/ {gsub(/[" \t]/, ""); sub(/^version=/, ""); print; exit}' Cargo.toml)"
MAJOR="${VERSION%%.*}"
case "$VERSION" in
    [0-9]*.[0-9]*.[0-9]*) ;;
    *) echo "install.sh: cannot read the version from Cargo.toml (got '$VERSION')" >&2; exit 1 ;;
esac

for tool in strip objcopy numfmt; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "install.sh: $tool not found (strip and objcopy come with binutils, numfmt with coreutils)" >&2
        exit 1
    }
done

echo "[install.sh] building zarrshard $VERSION (release)"
# `--features cli`: the feature set every script builds with, so the library is not rebuilt
# between them (the installed library is the same; it does not link the tool's dependencies).
cargo build --release --features cli --lib --quiet
NATIVE="$(bash scripts/native-static-libs.sh)"

REAL="libzarrshard.so.$VERSION"
SONAME="libzarrshard.so.$MAJOR"
LIB="$PREFIX/lib"
CMAKE_DIR="$LIB/cmake/zarrshard"
DEBUG_DIR="$LIB/.debug"
DEBUG_FILE="$REAL.debug"

# say FILE WHAT: one line for each file installed, with its size.
say() {
    printf '[install.sh] %s (%s)%s\n' "$1" "$(numfmt --to=iec --suffix=B "$(stat -c %s "$1")")" \
        "${2:+: $2}"
}

# The stripped files are made in a scratch directory, then installed.
STAGE="$(mktemp -d "${TMPDIR:-/tmp}/zarrshard-install.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
objcopy --only-keep-debug --compress-debug-sections=zlib target/release/libzarrshard.so \
    "$STAGE/$DEBUG_FILE"
strip --strip-unneeded -o "$STAGE/$REAL" target/release/libzarrshard.so
# The link records the debug file's name and CRC, so objcopy runs where it can read the file.
(cd "$STAGE" && objcopy --add-gnu-debuglink="$DEBUG_FILE" "$REAL")
strip --strip-debug --enable-deterministic-archives --remove-section=.llvmbc \
    --remove-section=.llvmcmd -o "$STAGE/libzarrshard.a" target/release/libzarrshard.a

install -d "$PREFIX/include" "$LIB" "$DEBUG_DIR" "$LIB/pkgconfig" "$CMAKE_DIR"
install -m 0644 include/zarrshard.h "$PREFIX/include/zarrshard.h"
say "$PREFIX/include/zarrshard.h" "the C header"
install -m 0644 bindings/cpp/zarrshard.hpp "$PREFIX/include/zarrshard.hpp"
say "$PREFIX/include/zarrshard.hpp" "the C++17 binding (header only, over zarrshard.h)"
install -m 0755 "$STAGE/$REAL" "$LIB/$REAL"
say "$LIB/$REAL" "shared, soname $SONAME, stripped (built: $(numfmt --to=iec --suffix=B \
    "$(stat -c %s target/release/libzarrshard.so)"))"
install -m 0644 "$STAGE/$DEBUG_FILE" "$DEBUG_DIR/$DEBUG_FILE"
say "$DEBUG_DIR/$DEBUG_FILE" "its debug info, found by gdb through its .gnu_debuglink"
ln -sfn "$REAL" "$LIB/$SONAME"
echo "[install.sh] $LIB/$SONAME -> $REAL"
ln -sfn "$SONAME" "$LIB/libzarrshard.so"
echo "[install.sh] $LIB/libzarrshard.so -> $SONAME"
install -m 0644 "$STAGE/libzarrshard.a" "$LIB/libzarrshard.a"
say "$LIB/libzarrshard.a" "static, debug info stripped (built: $(numfmt --to=iec --suffix=B \
    "$(stat -c %s target/release/libzarrshard.a)"))"

cat > "$LIB/pkgconfig/zarrshard.pc" <<EOF
prefix=$PREFIX
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: zarrshard
Description: Zarr v3 sharding (sharding_indexed) with a stable C ABI
Version: $VERSION
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lzarrshard
Libs.private: $NATIVE
Cflags: -I\${includedir}
EOF

# CMake wants library names, not -l flags.
CMAKE_NATIVE=""
for flag in $NATIVE; do
    case "$flag" in
        -lpthread) CMAKE_NATIVE="$CMAKE_NATIVE;Threads::Threads" ;;
        -l*) CMAKE_NATIVE="$CMAKE_NATIVE;${flag#-l}" ;;
        *) CMAKE_NATIVE="$CMAKE_NATIVE;$flag" ;;
    esac
done
CMAKE_NATIVE="${CMAKE_NATIVE#;}"

cat > "$CMAKE_DIR/zarrshard-config.cmake" <<EOF
# zarrshard $VERSION, installed by scripts/install.sh.
#
#   find_package(zarrshard CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE zarrshard::zarrshard)         # shared ($SONAME)
#   target_link_libraries(app PRIVATE zarrshard::zarrshard_static)  # static, with its system libraries
#
# Paths are relative to this file, so the installed tree can be moved.
include(CMakeFindDependencyMacro)
find_dependency(Threads)

get_filename_component(_zarrshard_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

if(NOT TARGET zarrshard::zarrshard)
  add_library(zarrshard::zarrshard SHARED IMPORTED)
  set_target_properties(zarrshard::zarrshard PROPERTIES
    IMPORTED_LOCATION "\${_zarrshard_prefix}/lib/$REAL"
    IMPORTED_SONAME "$SONAME"
    INTERFACE_INCLUDE_DIRECTORIES "\${_zarrshard_prefix}/include")
endif()

if(NOT TARGET zarrshard::zarrshard_static)
  add_library(zarrshard::zarrshard_static STATIC IMPORTED)
  set_target_properties(zarrshard::zarrshard_static PROPERTIES
    IMPORTED_LOCATION "\${_zarrshard_prefix}/lib/libzarrshard.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "\${_zarrshard_prefix}/include"
    INTERFACE_LINK_LIBRARIES "$CMAKE_NATIVE")
endif()

set(zarrshard_INCLUDE_DIRS "\${_zarrshard_prefix}/include")
set(zarrshard_LIBRARIES zarrshard::zarrshard)
unset(_zarrshard_prefix)
EOF

cat > "$CMAKE_DIR/zarrshard-config-version.cmake" <<EOF
# zarrshard $VERSION. Compatible with a request for the same major version (the soname is
# $SONAME) that is not newer than this one; 64-bit only, like the built library.
set(PACKAGE_VERSION "$VERSION")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(NOT "\${PACKAGE_FIND_VERSION}" STREQUAL "" AND NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL "$MAJOR")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "" AND NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "$VERSION (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
EOF

echo "[install.sh] $LIB/pkgconfig/zarrshard.pc: PKG_CONFIG_PATH=$LIB/pkgconfig cc app.c \$(pkg-config --cflags --libs zarrshard)"
echo "[install.sh] $CMAKE_DIR/zarrshard-config.cmake, zarrshard-config-version.cmake: find_package(zarrshard CONFIG) with CMAKE_PREFIX_PATH=$PREFIX"
echo "[install.sh] installed zarrshard $VERSION into $PREFIX"
