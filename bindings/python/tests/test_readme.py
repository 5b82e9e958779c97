"""The Python quick start of the repository's README.md and the Dask example of
docs/bindings.md, taken from between their marker comments and run as they stand, in a
temporary directory; what they wrote is then read back with zarr-python and compared with the
values they meant."""

import os
import re
import subprocess
import sys

import numpy as np
import zarr

REPO = os.path.join(os.path.dirname(__file__), "..", "..", "..")


def snippet(marker, page="README.md"):
    text = open(os.path.join(REPO, page), encoding="utf-8").read()
    m = re.search(rf"<!-- {marker} -->\n```python\n(.*?)```\n<!-- /{marker} -->", text, re.S)
    assert m, f"{page} has no {marker} block between its markers"
    return m.group(1)


def run(code, cwd):
    import zarrshard

    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(zarrshard.__file__)))
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def test_readme_python_quickstart(tmp_path):
    run(snippet("python-quickstart"), tmp_path)
    want = np.arange(4096 * 4096, dtype="uint16").reshape(4096, 4096)
    z = zarr.open_array(str(tmp_path / "data.zarr"), mode="r")
    assert z.chunks == (64, 64) and z.shards == (1024, 1024)
    np.testing.assert_array_equal(z[...], want)


def test_readme_dask_example(tmp_path):
    run(snippet("python-dask", "docs/bindings.md"), tmp_path)
    want = (np.arange(8 * 512 * 512, dtype=np.int64).reshape(8, 512, 512) % 65521).astype("uint16")
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "s.zarr"), mode="r")[...], want)
