"""A small HTTP server on 127.0.0.1 for the fake exporters: GET only, answered by a function of the path."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = tuple[int, str, bytes]  # status, content type, body
TEXT = "text/plain; charset=utf-8"


class LocalServer:
    """Serves `answer(path)` (the path without its query string) from a daemon thread until `stop()`."""

    def __init__(self, answer: Callable[[str], Answer], name: str, port: int = 0) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                status, content_type, body = answer(self.path.split("?")[0])
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up first

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (base class name)
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=name, daemon=True)
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
