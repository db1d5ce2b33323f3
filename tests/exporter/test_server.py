"""Tests of obspack.exporter.server: listen parsing, routes, concurrent scrapes over real sockets."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from obspack.demo.fake_vllm import FakeVLLM
from obspack.exporter.collector import ExporterCollector
from obspack.exporter.server import MetricsServer, parse_listen, start_server


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
