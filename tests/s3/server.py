"""An S3-compatible server on loopback for tests: moto's `moto_server` (PyPI `moto[server]`).

Tests that talk to S3 need a server they start and stop themselves, so that they run on a
machine without network access or cloud credentials and leave nothing behind. This module
starts `moto_server` as a child process on a free port of 127.0.0.1 and stops it when the
test is done, also when the test fails or the runner is killed (the child gets SIGKILL when
its parent dies, through Linux's parent-death signal). The server starts empty: buckets are
the test's to create.

Python tests (e.g. a pytest fixture)::

    from server import s3_server, ACCESS_KEY, SECRET_KEY, REGION

    with s3_server() as endpoint:          # "http://127.0.0.1:PORT"
        fs = s3fs.S3FileSystem(endpoint_url=endpoint, key=ACCESS_KEY, secret=SECRET_KEY)
        fs.mkdir("bucket")
        ...

Inside the `with` block the fixed test credentials are in the environment
(`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_DEFAULT_REGION`), so clients that read
them (boto3, s3fs, libcurl hosts) need no arguments; the previous values come back at exit.

Other programs (the C tests)::

    python tests/s3/server.py run -- CMD ARGS...

starts the server, runs CMD with `S3_ENDPOINT=http://127.0.0.1:PORT` and the credentials in
its environment, stops the server and exits with CMD's status (128 + N when a signal N
killed it; 2 when the server could not start). moto checks no signatures: the credentials
only need to be present.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

#: The fixed test credentials (moto accepts any; these name themselves as test values).
ACCESS_KEY = "zarrshard-test-key"
SECRET_KEY = "zarrshard-test-secret"
REGION = "us-east-1"

#: Seconds `s3_server` waits for the server to answer before it gives up.
STARTUP_TIMEOUT = 30.0

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
    "AWS_DEFAULT_REGION": REGION,
}

# prctl(2) option: the signal the child gets when the thread that started it dies.
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the parent dies, so no server outlives it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the `finally` of s3_server still stops it on every ordinary exit


def _free_port() -> int:
    """A port of 127.0.0.1 nobody listens on now (the server binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _moto_server_command(port: int) -> list[str]:
    """`moto_server` of this interpreter's environment (its console script, else the module)."""
    script = Path(sys.executable).with_name("moto_server")
    if script.exists():
        return [str(script), "-H", "127.0.0.1", "-p", str(port)]
    return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]


def _answers(endpoint: str) -> bool:
    """Whether the server answers HTTP (any status: a 4xx is an answer too)."""
    try:
        with urllib.request.urlopen(endpoint + "/moto-api/", timeout=1.0):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 5 s; always reaps the child."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


@contextlib.contextmanager
def _credentials_in_environ() -> Iterator[None]:
    """The test credentials in os.environ for the block, the previous values restored after."""
    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def s3_server(startup_timeout: float = STARTUP_TIMEOUT) -> Iterator[str]:
    """Run an empty S3 server on a free port of 127.0.0.1 for the block; yield its endpoint URL.

    Waits until it answers (at most `startup_timeout` seconds, else RuntimeError with the
    server's log); stops it and reaps its process at exit, also on an exception. The test
    credentials (`CREDENTIALS`) are in os.environ inside the block.
    """
    with tempfile.TemporaryFile() as log:
        # A port taken between _free_port and the server's bind makes it exit: try again.
        for _attempt in range(3):
            port = _free_port()
            endpoint = f"http://127.0.0.1:{port}"
            proc = subprocess.Popen(
                _moto_server_command(port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
            try:
                deadline = time.monotonic() + startup_timeout
                while proc.poll() is None and not _answers(endpoint):
                    if time.monotonic() > deadline:
                        raise RuntimeError(
                            f"moto_server did not answer on {endpoint} within "
                            f"{startup_timeout} s; its log:\n{_tail(log)}"
                        )
                    time.sleep(0.05)
                if proc.poll() is not None:
                    continue  # it exited (the port was taken): another port
                with _credentials_in_environ():
                    yield endpoint
                return
            finally:
                _stop(proc)
        raise RuntimeError(f"moto_server exited at start three times; its log:\n{_tail(log)}")


def _tail(log, limit: int = 4000) -> str:
    """The last `limit` bytes of the server's log file."""
    log.flush()
    log.seek(0)
    return log.read().decode("utf-8", "replace")[-limit:]


def _run(cmd: list[str]) -> int:
    """Run `cmd` with the server up; its exit status (128 + N for signal N)."""
    try:
        with s3_server() as endpoint:
            env = dict(os.environ, S3_ENDPOINT=endpoint)
            rc = subprocess.run(cmd, env=env, check=False, preexec_fn=_die_with_parent).returncode
    except RuntimeError as e:
        print(f"server.py: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"server.py: cannot run {cmd[0]}: {e}", file=sys.stderr)
        return 127
    return 128 - rc if rc < 0 else rc


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "run" or argv[1] != "--":
        print("usage: server.py run -- CMD [ARGS...]", file=sys.stderr)
        return 2
    # SIGTERM (a timeout's) ends the command's wait as an exception: subprocess.run kills the
    # command and `finally` stops the server. SIGKILL of this process: both get SIGKILL too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return _run(argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
