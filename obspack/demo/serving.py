"""A small HTTP server on 127.0.0.1 for the fake exporters: GET only, answered by a function of the path,
and able to misbehave on request as a broken target does.

How it answers, changeable while it runs: `delay_s` (a sleep before the headers) and `mode`:
`truncate` declares the full Content-Length but sends half and closes; `trickle` sends the body 64 bytes
at a time, 50 ms apart; `no_length` sends no Content-Length and closes when done; `close` closes the
connection without answering. Every answer closes its connection.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

Answer = tuple[int, str, bytes]  # status, content type, body
Mode = Literal["normal", "truncate", "trickle", "no_length", "close"]
TEXT = "text/plain; charset=utf-8"


class LocalServer:
    """Serves `answer(path)` (the path without its query string) from a daemon thread until `stop()`."""

    def __init__(self, answer: Callable[[str], Answer], name: str, port: int = 0) -> None:
        self.delay_s = 0.0
        self.mode: Mode = "normal"
        self.requests = 0  # every request, whatever its path
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # Content-Length is honoured, and `Connection: close` ends it

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                with server._lock:
                    server.requests += 1
                    status, content_type, body = answer(self.path.split("?")[0])
                server._send(self, status, content_type, body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (base class name)
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name=name, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        """HOST:PORT, as a Prometheus target."""
        host, port = self._httpd.server_address[:2]
        return f"{host}:{port}"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def _send(self, handler: BaseHTTPRequestHandler, status: int, content_type: str, body: bytes) -> None:
        mode = self.mode
        if self.delay_s:
            time.sleep(self.delay_s)
        handler.close_connection = True
        if mode == "close":
            return
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        if mode != "no_length":
            handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        try:
            if mode == "truncate":
                handler.wfile.write(body[: len(body) // 2])
            elif mode == "trickle":
                for start in range(0, len(body), 64):
                    handler.wfile.write(body[start : start + 64])
                    handler.wfile.flush()
                    time.sleep(0.05)
            else:
                handler.wfile.write(body)
        except OSError:
            pass  # the client gave up first
