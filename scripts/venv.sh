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
REQUIREMENTS="zarr==3.1.6
tensorstore==0.1.86
numpy==2.3.5
numcodecs==0.16.6
google-crc32c==1.9.0
ml_dtypes==0.6.0
donfig==0.8.1.post1
PyYAML==6.0.3
packaging==26.3
typing_extensions==4.16.0"

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
from zarr.codecs import BloscCodec, ZstdCodec, GzipCodec, Crc32cCodec, ShardingCodec
import numcodecs.blosc, numcodecs.zstd
from importlib.metadata import version
print(" ".join(f"{p}=={version(p)}" for p in
               ("zarr", "tensorstore", "numpy", "numcodecs", "google-crc32c")))
PY
    printf '%s' "$WANT" > "$STAMP"
fi

echo "$VENV/bin/python"
