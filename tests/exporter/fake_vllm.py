"""A fake vLLM /metrics server on 127.0.0.1 whose answer each test can bend out of shape."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

Mode = Literal["normal", "truncate", "trickle", "no_length", "close"]


class FakeVLLM:
    """Serves ``payload`` (bytes, or a callable giving bytes per request) at any path.

    Knobs, changeable while it runs: ``status`` (HTTP status), ``delay_s`` (sleep before the
    headers), ``mode``: ``truncate`` declares the full Content-Length but sends half and closes;
    ``trickle`` sends the body a few bytes at a time with pauses; ``no_length`` sends without
    Content-Length and closes when done; ``close`` closes the connection without answering.
    """

    def __init__(self, payload: bytes | Callable[[], bytes]) -> None:
        self.payload = payload
        self.status = 200
        self.delay_s = 0.0
        self.mode: Mode = "normal"
        self.requests = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                fake._serve(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/metrics"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.requests += 1
            body = self.payload() if callable(self.payload) else self.payload
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.mode == "close":
            handler.close_connection = True
            return
        handler.send_response(self.status)
        handler.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        if self.mode != "no_length":
            handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.close_connection = True
        try:
            if self.mode == "truncate":
                handler.wfile.write(body[: len(body) // 2])
            elif self.mode == "trickle":
                for start in range(0, len(body), 64):
                    handler.wfile.write(body[start : start + 64])
                    handler.wfile.flush()
                    time.sleep(0.05)
            else:
                handler.wfile.write(body)
        except OSError:
            pass  # the client gave up first
