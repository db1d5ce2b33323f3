"""A webhook receiver on 127.0.0.1 that keeps every Alertmanager notification it gets.

Alertmanager POSTs one JSON document per notification (webhook version 4): `receiver`, `status`
(firing or resolved), `groupLabels` and `alerts`, each with `status`, `labels` and `annotations`.
Point each receiver at `url_for(receiver)`; the path names the receiver again, as a cross-check.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Notification:
    path: str  # the receiver name taken from the URL path
    body: dict[str, Any]

    @property
    def receiver(self) -> str:
        return str(self.body.get("receiver", ""))

    @property
    def status(self) -> str:
        return str(self.body.get("status", ""))

    def alerts(self) -> Iterator[dict[str, Any]]:
        yield from self.body.get("alerts", [])


class WebhookReceiver:
    """Collects notifications; `notifications()` returns a snapshot. Stop it with `stop()`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._received: list[Notification] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    self.send_response(400)
                    self.end_headers()
                    return
                with hook._lock:
                    hook._received.append(Notification(self.path.strip("/"), body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (base class name)
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="webhook", daemon=True)
        self._thread.start()

    def url_for(self, receiver: str) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/{receiver}"

    def notifications(self) -> list[Notification]:
        with self._lock:
            return list(self._received)

    def deliveries(self) -> list[tuple[str, str, dict[str, str]]]:
        """(receiver, alert status, alert labels) for every alert of every notification, in order."""
        return [
            (n.receiver, a.get("status", ""), a.get("labels", {}))
            for n in self.notifications()
            for a in n.alerts()
        ]

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)
