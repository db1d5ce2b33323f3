"""Tiny HTTP servers on 127.0.0.1 for the doctor's client: ones that misbehave (401, garbage, slow, endless
or trickling bodies, gzip bombs, bodies cut short), one that records what it is sent, and a Mimir-like proxy
in front of a real Prometheus (path prefix, tenant header)."""

from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    form: dict[str, list[str]]
    headers: dict[str, str]


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes | str | dict[str, Any] = b""
    content_type: str = "application/json"
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    # Instead of `body`: chunks written one after the other, `pace_s` apart, with no Content-Length unless
    # `headers` has one (the body then ends when the server closes the connection).
    stream: Callable[[], Iterable[bytes]] | None = None
    # Instead of everything: bytes written as they are, status line and headers included.
    raw: Callable[[], Iterable[bytes]] | None = None
    pace_s: float = 0.0


Handler = Callable[[Request], Answer]


def vector(*samples: tuple[dict[str, str], float]) -> dict[str, Any]:
    result = [{"metric": m, "value": [time.time(), str(v)]} for m, v in samples]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


@dataclass
class Fake:
    url: str
    seen: list[Request] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0


@contextmanager
def serve(handler: Handler, tls: ssl.SSLContext | None = None) -> Iterator[Fake]:
    """Run `handler` for every request until the block ends; `Fake.seen` records the requests."""
    lock = threading.Lock()
    fake = Fake(url="")

    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers (answers without a length close instead)

        def log_message(self, *_: object) -> None:
            pass

        def _answer(self) -> None:
            parsed = urllib.parse.urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            request = Request(
                method=self.command,
                path=parsed.path,
                query=urllib.parse.parse_qs(parsed.query),
                form=urllib.parse.parse_qs(body),
                headers={k.lower(): v for k, v in self.headers.items()},
            )
            with lock:
                fake.seen.append(request)
                fake.in_flight += 1
                fake.most_in_flight = max(fake.most_in_flight, fake.in_flight)
            try:
                answer = handler(request)
                time.sleep(answer.delay_s)
            finally:
                # No longer in flight once answered: the client may send its next request as soon as it
                # reads the answer, and that one's thread may count it before this one would.
                with lock:
                    fake.in_flight -= 1
            try:
                self._write(answer)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass

        def _write(self, answer: Answer) -> None:
            if answer.raw is not None or answer.stream is not None:
                self.close_connection = True
            if answer.raw is not None:
                self._paced(answer.raw(), answer.pace_s)
                return
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            if answer.stream is not None:
                self.send_header("Connection", "close")
                self.end_headers()
                self._paced(answer.stream(), answer.pace_s)
                return
            data = answer.body
            if isinstance(data, dict):
                data = json.dumps(data)
            payload = data.encode() if isinstance(data, str) else data
            if "Content-Length" not in answer.headers:
                self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _paced(self, chunks: Iterable[bytes], pace_s: float) -> None:
            for chunk in chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
                if pace_s:
                    time.sleep(pace_s)

        do_GET = _answer
        do_POST = _answer

    class _Server(ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            pass  # a client that hangs up on an endless answer is what these servers are for

    server = _Server(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    scheme = "https" if tls is not None else "http"
    fake.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def mimir_like(upstream: str, tenant: str, token: str) -> Handler:
    """A proxy that serves `upstream`'s API under /prometheus, only to requests with the tenant and token,
    names itself Mimir in buildinfo and has no targets, status/tsdb or Thanos stores (as Mimir)."""

    def handle(request: Request) -> Answer:
        if request.headers.get("x-scope-orgid") != tenant:
            return Answer(401, "no org id\n", "text/plain")
        if request.headers.get("authorization") != f"Bearer {token}":
            return Answer(401, "unauthorized\n", "text/plain")
        if not request.path.startswith("/prometheus/api/v1/"):
            return Answer(404, "404 page not found\n", "text/plain")
        path = request.path.removeprefix("/prometheus")
        if path == "/api/v1/status/buildinfo":
            return Answer(
                body={"status": "success", "data": {"application": "Grafana Mimir", "version": "2.14.0"}}
            )
        if path in ("/api/v1/targets", "/api/v1/status/tsdb", "/api/v1/stores"):
            return Answer(404, "404 page not found\n", "text/plain")
        query = urllib.parse.urlencode({**request.query, **request.form}, doseq=True)
        try:
            with urllib.request.urlopen(f"{upstream}{path}?{query}", timeout=30) as response:
                return Answer(response.status, response.read())
        except urllib.error.HTTPError as e:
            return Answer(e.code, e.read())

    return handle


def success(data: Any) -> Answer:
    return Answer(body={"status": "success", "data": data})


def empty_prometheus(request: Request) -> Answer:
    """A Prometheus without series: every endpoint the doctor reads answers in its shape, with nothing in it
    (Thanos stores and the vmalert proxy are not served); `vector(1)` answers 1."""
    path = request.path
    if path == "/api/v1/query":
        return Answer(body=vector(({}, 1)) if request.form.get("query") == ["vector(1)"] else vector())
    answers = {
        "/api/v1/query_range": {"resultType": "matrix", "result": []},
        "/api/v1/labels": [],
        "/api/v1/status/buildinfo": {"version": "2.53.0"},
        "/api/v1/status/tsdb": {"headStats": {"numSeries": 0}},
        "/api/v1/rules": {"groups": []},
        "/api/v1/targets": {"activeTargets": []},
    }
    if path.startswith("/api/v1/label/"):
        return success([])
    if path in answers:
        return success(answers[path])
    return Answer(404, "404 page not found\n", "text/plain")


def first_query(request: Request) -> bool:
    """The doctor's first request: `vector(1)`, which tells whether the server can be asked at all."""
    return request.path == "/api/v1/query" and request.form.get("query") == ["vector(1)"]


def endless_vector(mib: int = 512) -> Iterator[bytes]:
    """A vector answer that goes on for `mib` MiB (far past any cap) and never closes its brackets."""
    yield b'{"status":"success","data":{"resultType":"vector","result":['
    row = b'{"metric":{"pod":"p"},"value":[1,"1"]},' * 1000
    for _ in range(mib * 1024 * 1024 // len(row)):
        yield row


def gzip_bomb(mib: int = 256) -> Iterator[bytes]:
    """One gzip stream that decompresses to `mib` MiB (a valid answer, then spaces); compressed as it is
    sent, so the server makes only what the client reads."""
    import zlib

    gzip = zlib.compressobj(9, zlib.DEFLATED, 31)
    yield gzip.compress(
        json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
    )
    block = b" " * (1024 * 1024)
    for _ in range(mib):
        yield gzip.compress(block)
    yield gzip.flush()
