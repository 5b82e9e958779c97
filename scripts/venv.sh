#!/usr/bin/env bash
# Create (idempotently) the Python venv used by the interop harness, or one of the venvs of
# the peers whose pins clash with it.
#
#   scripts/venv.sh            -> $REPO/.venv with zarr-python + tensorstore
#   scripts/venv.sh ome        -> $REPO/.venv-ome with ome-zarr (ome-zarr-py, ome-zarr-models,
#                                 zarr-python): tests/c/check_ome.py reads examples-c/ome_pyramid
#   scripts/venv.sh acquire    -> $REPO/.venv-acquire with acquire-zarr + zarr-python:
#                                 bench/acquire/ (scripts/bench.sh)
#   scripts/venv.sh python     -> $REPO/.venv-python: what the Python package (bindings/python)
#                                 builds with (cffi, setuptools) and is tested and benchmarked
#                                 against: zarr-python, zarrs (its pipeline), tensorstore, dask +
#                                 distributed, s3fs and moto[server] (an S3 server on loopback)
#
# The venv lives at $REPO/.venv (or $REPO/.venv-NAME; REPO = the repository root, derived
# from this script's location). pip runs only when the requirement set differs from the
# one recorded in the stamp file .requirements.stamp inside it, so reruns are
# fast. Callers use "$REPO/.venv/bin/python". The python path is printed last.
#
# Override the interpreter with PYTHON=/path/to/python3 (must be >= 3.11,
# which zarr 3.1 requires).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WHICH="${1:-}"
case "$WHICH" in
    "") VENV="$REPO/.venv" ;;
    ome | acquire | python) VENV="$REPO/.venv-$WHICH" ;;
    *) echo "[venv.sh] unknown venv '$WHICH' (none, ome, acquire or python)" >&2; exit 2 ;;
esac
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
# The check imports after installing, per venv.
CHECK='import zarr, tensorstore, numpy, numcodecs, google_crc32c
import fsspec, aiohttp, jinja2, pandas, fastparquet
from zarr.codecs import BloscCodec, ZstdCodec, GzipCodec, Crc32cCodec, ShardingCodec
import numcodecs.blosc, numcodecs.zstd
from importlib.metadata import version
print(" ".join(f"{p}=={version(p)}" for p in
               ("zarr", "tensorstore", "numpy", "numcodecs", "google-crc32c")))'

# ome-zarr 0.18.0 is the last release for Python 3.11 (later ones need 3.12); it reads NGFF
# 0.5 (Zarr v3) and validates with ome-zarr-models. Its own dependencies pinned as resolved.
if [ "$WHICH" = ome ]; then
    REQUIREMENTS="ome-zarr==0.18.0
ome-zarr-models==1.7
pydantic-zarr==0.9.2
pydantic==2.12.5
pydantic_core==2.41.5
annotated-types==0.8.0
typing-inspection==0.4.5
zarr==3.1.6
numpy==2.4.6
numcodecs==0.16.6
google-crc32c==1.9.0
donfig==0.8.1.post1
PyYAML==6.0.4
packaging==26.4
typing_extensions==4.16.0
dask==2026.8.0
cloudpickle==3.1.3
partd==1.4.2
locket==1.0.0
toolz==1.2.0
click==8.5.1
importlib_metadata==10.2.0
zipp==4.1.2
fsspec==2026.9.0
s3fs==2026.9.0
aiobotocore==3.10.0
botocore==1.43.117
jmespath==1.1.0
aioitertools==0.13.0
wrapt==2.5.2
urllib3==2.8.0
aiohttp==3.14.5
aiohappyeyeballs==2.7.1
aiosignal==1.4.0
attrs==26.1.0
frozenlist==1.8.0
multidict==7.2.1
propcache==0.5.4
yarl==1.25.1
idna==3.20
python-dateutil==2.9.0.post0
six==1.17.0
requests==2.34.2
certifi==2026.10.19.post1
charset-normalizer==3.5.3
rangehttpserver==1.4.0
scikit-image==0.26.0
scipy==1.17.1
networkx==3.6.1
pillow==13.0.0
ImageIO==2.38.1
tifffile==2026.3.3
lazy-loader==0.6
lazy-importer==0.1.0
Deprecated==1.3.1"
    CHECK='import ome_zarr, ome_zarr_models, zarr, numpy
from ome_zarr.reader import Reader
from ome_zarr_models.v05.image import Image
from importlib.metadata import version
print(" ".join(f"{p}=={version(p)}" for p in ("ome-zarr", "ome-zarr-models", "zarr", "numpy")))'
fi
# acquire-zarr (the acquisition-streaming peer of bench/acquire) and zarr-python to read both
# outputs back.
if [ "$WHICH" = acquire ]; then
    REQUIREMENTS="acquire-zarr==0.10.0
zarr==3.1.6
numpy==2.4.6
numcodecs==0.16.6
google-crc32c==1.9.0
donfig==0.8.1.post1
PyYAML==6.0.4
packaging==26.4
typing_extensions==4.16.0"
    CHECK='import acquire_zarr, zarr, numpy, numcodecs.blosc
from importlib.metadata import version
print(" ".join(f"{p}=={version(p)}" for p in ("acquire-zarr", "zarr", "numpy")))'
fi

# The Python package's build, tests and benchmark (bindings/python): its peers and Dask, S3.
# Pinned as pip resolved them on 2026-11-29.
if [ "$WHICH" = python ]; then
    REQUIREMENTS="setuptools==84.2.1
wheel==0.48.0
aiobotocore==3.10.0
aiohappyeyeballs==2.7.1
aiohttp==3.14.5
aioitertools==0.13.0
aiosignal==1.4.0
annotated-types==0.8.0
antlr4-python3-runtime==4.13.2
attrs==26.1.0
aws-xray-sdk==2.15.0
blinker==1.9.0
boto3==1.43.117
botocore==1.43.117
certifi==2026.10.19.post1
cffi==2.1.1
cfn-lint==1.58.0
charset-normalizer==3.5.3
click==8.5.1
cloudpickle==3.1.3
cryptography==50.0.2
dask==2026.8.0
distributed==2026.8.0
docker==7.2.0
donfig==0.8.1.post1
Flask==3.1.3
flask-cors==6.0.5
frozenlist==1.8.0
fsspec==2026.9.0
google-crc32c==1.9.0
graphql-core==3.3.2
idna==3.20
importlib_metadata==10.2.0
iniconfig==2.3.1
itsdangerous==2.2.0
Jinja2==3.1.6
jmespath==1.1.0
joserfc==1.8.0
jsonpatch==1.48
jsonpath-ng==1.16.0
jsonpointer==3.12
jsonschema==4.26.0
jsonschema-path==0.5.0
jsonschema-specifications==2025.9.1
lazy-importer==0.1.0
lazy-object-proxy==1.13.0
locket==1.0.0
MarkupSafe==3.0.4
ml_dtypes==0.6.0
moto==5.2.5
mpmath==1.3.0
msgpack==1.2.4
multidict==7.2.1
networkx==3.6.1
numcodecs==0.16.6
numpy==2.3.5
openapi-schema-validator==0.9.0
openapi-spec-validator==0.9.0
packaging==26.4
partd==1.4.2
pathable==0.6.0
pluggy==1.7.0
propcache==0.5.4
psutil==7.2.2
py-partiql-parser==0.6.3
pycparser==3.12
pydantic==2.14.4
pydantic-settings==2.16.3
pydantic_core==2.50.5
Pygments==2.21.0
pyparsing==3.3.3
pytest==9.2.0
python-dateutil==2.9.0.post0
python-dotenv==1.2.4
PyYAML==6.0.4
referencing==0.37.0
regex==2026.11.19
requests==2.34.2
responses==0.26.3
rfc3339-validator==0.1.4
rpds-py==2026.9.1
s3fs==2026.9.0
s3transfer==0.19.3
six==1.17.0
sortedcontainers==2.4.0
sympy==1.14.0
tblib==3.2.2
tensorstore==0.1.86
toolz==1.2.0
tornado==6.6.1
typing-inspection==0.4.5
typing_extensions==4.16.0
urllib3==2.8.0
Werkzeug==3.1.9
wrapt==2.5.2
xmltodict==1.0.4
yarl==1.25.1
zarr==3.1.6
zarrs==0.2.3
zict==3.0.0
zipp==4.1.2"
    CHECK='import cffi, setuptools, numpy, zarr, zarrs, tensorstore, dask.array, distributed
import s3fs, moto.server, pytest
from importlib.metadata import version
print(" ".join(f"{p}=={version(p)}" for p in
               ("cffi", "zarr", "zarrs", "tensorstore", "dask", "s3fs", "moto")))'
fi

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
    # Fail now, not later, if a codec backend (or the peer) is missing.
    "$VENV/bin/python" -c "$CHECK"
    printf '%s' "$WANT" > "$STAMP"
fi

echo "$VENV/bin/python"
