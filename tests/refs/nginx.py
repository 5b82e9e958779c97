"""A real HTTP server for the tests: Debian's nginx serving a directory on a free loopback
port, with its configuration, logs and pid in a temporary directory, stopped at exit.

    with Nginx(root) as srv:
        srv.url            # http://127.0.0.1:PORT
        srv.access_lines() # the access log so far: "METHOD URI STATUS RANGE BYTES" per line

nginx serves static files with byte-range requests (`Range: bytes=a-b` -> 206) by default.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

CONF = """\
daemon off;
master_process off;
worker_processes 1;
user root;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 64; }}
http {{
    log_format ranges '$request_method $uri $status "$http_range" $body_bytes_sent';
    access_log {tmp}/access.log ranges;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    types {{ application/octet-stream bin; }}
    default_type application/octet-stream;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{ }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_binary() -> str:
    for p in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if p and os.access(p, os.X_OK):
            return p
    raise RuntimeError("nginx not found (tests/refs/run.sh installs nginx-light)")


class Nginx:
    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.proc = None

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="zarrshard-nginx-")
        for attempt in range(5):
            self.port = free_port()
            conf = os.path.join(self.tmp, "nginx.conf")
            with open(conf, "w") as f:
                f.write(CONF.format(tmp=self.tmp, port=self.port, root=self.root))
            self.proc = subprocess.Popen(
                [nginx_binary(), "-p", self.tmp, "-c", conf, "-e", os.path.join(self.tmp, "error.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._wait_ready():
                self.url = f"http://127.0.0.1:{self.port}"
                return self
            self._stop()
        raise RuntimeError(f"nginx did not start: {self.error_log()}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False  # e.g. the port was taken meanwhile
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def error_log(self) -> str:
        try:
            with open(os.path.join(self.tmp, "error.log")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def access_lines(self) -> list[str]:
        try:
            with open(os.path.join(self.tmp, "access.log")) as f:
                return f.read().splitlines()
        except OSError:
            return []

    def _stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __exit__(self, *exc):
        self._stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
