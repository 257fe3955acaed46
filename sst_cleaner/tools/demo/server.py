"""Serve a :class:`DemoSite` on 127.0.0.1 (random free port) from a background thread."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import urlsplit


class _Handler(BaseHTTPRequestHandler):
    server_version = "sst-demo/1"
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: without TCP_NODELAY a keep-alive
        # client's delayed ACK stalls every response ~40 ms (Nagle)
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        site = self.server.site  # type: ignore[attr-defined]
        path = urlsplit(self.path).path
        found = site.resource(path)
        if found is None:
            body, ctype, status = b"<html><body><h1>Not found</h1></body></html>", "text/html; charset=utf-8", 404
        else:
            body, ctype = found
            status = 200
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


class DemoServer:
    """``with DemoServer(site) as s: crawl(s.url)``; or ``start()`` / ``close()``."""

    def __init__(self, site: Any, host: str = "127.0.0.1", port: int = 0):
        self.site = site
        self._httpd = _Server((host, port), _Handler)
        self._httpd.site = site  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="sst-demo-server", daemon=True)
        self._started = False

    @property
    def url(self) -> str:
        # filled from getsockname() after bind: the host is a str, never bytes
        host, port = cast("tuple[str, int]", self._httpd.server_address[:2])
        return f"http://{host}:{port}/"

    def start(self) -> "DemoServer":
        if not self._started:
            self._thread.start()
            self._started = True
        return self

    def close(self) -> None:
        if self._started:
            self._httpd.shutdown()
            self._started = False
        self._httpd.server_close()

    def __enter__(self) -> "DemoServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()
