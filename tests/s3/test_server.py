"""tests/s3/server.py itself: the server answers S3 inside the block and is gone after it (also
when the block raises), the credentials are in the environment only meanwhile, and `run --`
passes the endpoint to the command and its exit status back.

    python -m pytest tests/s3/test_server.py
"""

import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from server import ACCESS_KEY, CREDENTIALS, s3_server  # noqa: E402

SERVER = Path(__file__).with_name("server.py")


def status(url: str, method: str = "GET") -> int:
    """The HTTP status of a request to `url`."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def refused(endpoint: str) -> bool:
    """Whether nothing listens at `endpoint` any more."""
    try:
        urllib.request.urlopen(endpoint, timeout=2)
    except urllib.error.HTTPError:
        return False
    except (urllib.error.URLError, OSError):
        return True
    return False


def test_serves_s3_in_the_block_and_stops_after(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the caller's")
    with s3_server() as endpoint:
        assert endpoint.startswith("http://127.0.0.1:")
        assert {k: os.environ[k] for k in CREDENTIALS} == CREDENTIALS
        assert os.environ["AWS_ACCESS_KEY_ID"] == ACCESS_KEY
        # Empty at start: a bucket is the test's to make, and then it lists empty.
        assert status(f"{endpoint}/bucket-one") == 404
        assert status(f"{endpoint}/bucket-one", "PUT") == 200
        assert status(f"{endpoint}/bucket-one?list-type=2") == 200
    assert refused(endpoint)
    assert "AWS_ACCESS_KEY_ID" not in os.environ
    assert os.environ["AWS_SECRET_ACCESS_KEY"] == "the caller's"


def test_stops_when_the_block_raises():
    with pytest.raises(ValueError, match="the test's"):
        with s3_server() as endpoint:
            raise ValueError("the test's")
    assert refused(endpoint)


def test_each_server_starts_empty():
    with s3_server() as endpoint:
        assert status(f"{endpoint}/kept", "PUT") == 200
    with s3_server() as endpoint:
        assert status(f"{endpoint}/kept") == 404


def test_run_passes_endpoint_and_exit_status():
    script = 'test "$AWS_ACCESS_KEY_ID" = "$1" && echo "$S3_ENDPOINT" && exit 7'
    done = subprocess.run(
        [sys.executable, str(SERVER), "run", "--", "sh", "-c", script, "sh", ACCESS_KEY],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 7, done.stderr
    endpoint = done.stdout.strip()
    assert endpoint.startswith("http://127.0.0.1:")
    assert refused(endpoint)


def test_run_usage_and_missing_command():
    done = subprocess.run([sys.executable, str(SERVER), "serve"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "usage: server.py run -- CMD [ARGS...]" in done.stderr
    done = subprocess.run(
        [sys.executable, str(SERVER), "run", "--", "/nonexistent/cmd"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 127
    assert "cannot run /nonexistent/cmd" in done.stderr
