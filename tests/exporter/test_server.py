"""Tests of obspack.exporter.server: listen parsing, routes, concurrent scrapes over real sockets."""

from __future__ import annotations

import gzip
import re
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import GaugeMetricFamily

from obspack.demo.fake_vllm import FakeVLLM
from obspack.exporter.collector import ExporterCollector
from obspack.exporter.server import MetricsServer, make_app, parse_listen, start_server


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0.0.0.0:10025", ("0.0.0.0", 10025)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        (":10025", ("0.0.0.0", 10025)),
        ("[::]:10025", ("::", 10025)),
        ("[::1]:8080", ("::1", 8080)),
        ("localhost:65535", ("localhost", 65535)),
    ],
)
def test_parse_listen(value: str, expected: tuple[str, int]) -> None:
    assert parse_listen(value) == expected


@pytest.mark.parametrize("value", ["10025", "host:", "host:port", "host:65536", "host:-1", ":::10025", ""])
def test_parse_listen_rejects(value: str) -> None:
    with pytest.raises(ValueError, match="--listen"):
        parse_listen(value)


@pytest.fixture
def served(fake_vllm: FakeVLLM) -> Iterator[tuple[MetricsServer, FakeVLLM]]:
    registry = CollectorRegistry()
    collector = ExporterCollector([fake_vllm.url], registry=registry)
    server = start_server("127.0.0.1", 0, registry)
    try:
        yield server, fake_vllm
    finally:
        server.shutdown()
        collector.close()


def _get(server: MetricsServer, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_metrics_route_scrapes_the_target(served: tuple[MetricsServer, FakeVLLM]) -> None:
    server, fake = served
    status, body = _get(server, "/metrics")
    assert status == 200
    assert (
        f'obspack_vllm_kv_cache_blocks{{engine="0",model_name="acme/llm-7b",state="free",target="{fake.url}"}} 750.0'
        in body
    )
    assert fake.requests == 1


def test_healthz_does_not_touch_the_target(served: tuple[MetricsServer, FakeVLLM]) -> None:
    server, fake = served
    assert _get(server, "/healthz") == (200, "ok\n")
    assert _get(server, "/")[0] == 200
    assert fake.requests == 0


def test_unknown_path_is_404(served: tuple[MetricsServer, FakeVLLM]) -> None:
    server, _ = served
    assert _get(server, "/nope")[0] == 404


def test_concurrent_http_scrapes(served: tuple[MetricsServer, FakeVLLM]) -> None:
    server, fake = served
    fake.delay_s = 0.2
    results: list[tuple[int, str]] = []
    threads = [threading.Thread(target=lambda: results.append(_get(server, "/metrics"))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(results) == 8
    assert all(status == 200 and 'obspack_target_up{target="' in body for status, body in results)
    assert all(f'obspack_target_up{{target="{fake.url}"}} 1.0' in body for _, body in results)


def test_busy_port_raises_oserror(served: tuple[MetricsServer, FakeVLLM]) -> None:
    server, _ = served
    with pytest.raises(OSError):
        start_server("127.0.0.1", server.port, CollectorRegistry())


class _Lines:
    """A collector of one gauge with ``count`` labelled samples (its answer outgrows the server's write buffer)."""

    def __init__(self, count: int) -> None:
        self.count = count

    def collect(self) -> list[GaugeMetricFamily]:
        family = GaugeMetricFamily("obspack_test_lines", "Lines.", labels=["line"])
        for index in range(self.count):
            family.add_metric([f"line-{index:06d}"], float(index))
        return [family]


def _raw_answer(port: int, request: bytes) -> bytes:
    """Everything the server sends back for ``request`` until it closes, the Date header left out."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    return re.sub(rb"\r\nDate: [^\r]*", b"", b"".join(chunks))


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.0\r\n\r\n",
        b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text; version=1.0.0\r\n\r\n",
        b"GET / HTTP/1.x\r\n\r\n",  # http.server's own error page
    ],
    ids=["healthz", "index", "404", "metrics", "metrics-gzip", "openmetrics", "bad-request"],
)
def test_answers_are_the_bytes_a_plain_wsgiref_server_sends(request_bytes: bytes) -> None:
    """The buffered, TCP_NODELAY handler changes how the answer is sent, never what: the same status
    line, headers and body as wsgiref's own unbuffered handler, also for a body larger than the buffer
    (about 200 KiB here) and for an error that http.server writes itself."""
    registry = CollectorRegistry()
    registry.register(_Lines(5000))
    ours = start_server("127.0.0.1", 0, registry)
    plain = make_server("127.0.0.1", 0, make_app(registry), handler_class=_Unlogged)
    thread = threading.Thread(target=plain.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        expected = _raw_answer(plain.server_address[1], request_bytes)
        got = _raw_answer(ours.port, request_bytes)
    finally:
        ours.shutdown()
        plain.shutdown()
        plain.server_close()
    assert expected.startswith(b"HTTP/1.0 ") or b"Bad request" in expected
    if request_bytes.startswith(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"):
        assert len(expected) > 1 << 17  # far over the handler's 8 KiB buffer
    assert got == expected


class _Unlogged(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_gzipped_answer_carries_no_timestamp() -> None:
    """Two scrapes of the same metrics give the same bytes, in different seconds too: the gzip header's MTIME
    is 0 ("no timestamp"), not the time of the answer."""
    registry = CollectorRegistry()
    registry.register(_Lines(10))
    server = start_server("127.0.0.1", 0, registry)
    try:
        answer = _raw_answer(
            server.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n"
        )
    finally:
        server.shutdown()
    headers, body = answer.split(b"\r\n\r\n", 1)
    assert b"Content-Encoding: gzip" in headers
    assert body[:2] == b"\x1f\x8b" and body[4:8] == b"\0\0\0\0"
    assert b'obspack_test_lines{line="line-000009"} 9.0' in gzip.decompress(body)
