#!/usr/bin/env bash
# Create (idempotently) the Python venv used by the interop harness.
#
#   scripts/venv.sh            -> $REPO/.venv with zarr-python + tensorstore
#
# The venv lives at $REPO/.venv (REPO = the repository root, derived from this
# script's location). pip runs only when the requirement set differs from the
# one recorded in the stamp file $REPO/.venv/.requirements.stamp, so reruns are
# fast. Callers use "$REPO/.venv/bin/python". The python path is printed last.
#
# Override the interpreter with PYTHON=/path/to/python3 (must be >= 3.11,
# which zarr 3.1 requires).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/.venv"
STAMP="$VENV/.requirements.stamp"
PYTHON="${PYTHON:-python3}"

# Exact pins keep the fixtures reproducible. numcodecs provides the gzip /
# zstd / blosc codecs zarr 3 uses; zarr 3.1's crc32c codec is backed by
# google-crc32c (not the "crc32c" package that zarr 2 / numcodecs used).
# ml_dtypes is tensorstore's dependency.
# fsspec reads kerchunk reference sets (tests/refs): aiohttp (+ its dependencies) for http://,
# Jinja2 because ReferenceFileSystem imports it for any version-1 set with templates, and
# pandas + fastparquet (LazyReferenceMapper's default engine, with cramjam) for Parquet sets.
REQUIREMENTS="zarr==3.1.6
tensorstore==0.1.86
numpy==2.3.5
numcodecs==0.16.6
google-crc32c==1.9.0
ml_dtypes==0.6.0
donfig==0.8.1.post1
PyYAML==6.0.3
packaging==26.3
typing_extensions==4.16.0
fsspec==2026.9.0
aiohttp==3.14.5
aiohappyeyeballs==2.7.1
aiosignal==1.4.0
attrs==26.1.0
frozenlist==1.8.0
multidict==7.2.1
propcache==0.5.4
yarl==1.25.1
idna==3.20
Jinja2==3.1.6
MarkupSafe==3.0.4
pandas==3.1.1
python-dateutil==4.0.0
tzdata==2026.6
fastparquet==2026.9.0
cramjam==2.14.0"

log() { echo "[venv.sh] $*" >&2; }

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    log "$PYTHON not found; installing python3 from Debian"
    apt-get update && apt-get install -y python3 python3-venv
fi

if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
    log "error: $("$PYTHON" --version 2>&1) is too old; zarr 3.1 needs Python >= 3.11"
    exit 1
fi

make_venv() {
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
}

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1 \
        || [ ! -x "$VENV/bin/pip" ]; then
    log "creating $VENV"
    if ! make_venv; then
        log "python3 -m venv failed; installing python3-venv"
        apt-get update && apt-get install -y python3-venv
        make_venv
    fi
fi

WANT="$( { echo "python=$("$VENV/bin/python" -c 'import sys; print(sys.version)')"; echo "$REQUIREMENTS"; } )"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
    log "requirements already installed (stamp matches)"
else
    log "installing requirements"
    REQ_FILE="$(mktemp)"
    trap 'rm -f "$REQ_FILE"' EXIT
    echo "$REQUIREMENTS" > "$REQ_FILE"
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQ_FILE"
    # Fail now, not later, if a codec backend is missing.
    "$VENV/bin/python" - <<'PY'
import zarr, tensorstore, numpy, numcodecs, google_crc32c
import fsspec, aiohttp, jinja2, pandas, fastparquet
from zarr.codecs import BloscCodec, ZstdCodec, GzipCodec, Crc32cCodec, ShardingCodec
import numcodecs.blosc, numcodecs.zstd
from importlib.metadata import version
print(" ".join(f"{p}=={version(p)}" for p in
               ("zarr", "tensorstore", "numpy", "numcodecs", "google-crc32c")))
PY
    printf '%s' "$WANT" > "$STAMP"
fi

echo "$VENV/bin/python"
