"""Tests of obspack.exporter.scrape against real sockets on 127.0.0.1."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from obspack.exporter.scrape import ScrapeError, fetch_metrics

from .conftest import free_port
from .fake_vllm import FakeVLLM

BODY = b'# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 1\n' * 50


@pytest.fixture
def server() -> Iterator[FakeVLLM]:
    fake = FakeVLLM(BODY)
    try:
        yield fake
    finally:
        fake.stop()


def _reason(url: str, timeout_s: float = 1.0, max_bytes: int = 1 << 20) -> str:
    with pytest.raises(ScrapeError) as caught:
        fetch_metrics(url, timeout_s, max_bytes)
    return caught.value.reason


def test_fetches_the_body(server: FakeVLLM) -> None:
    assert fetch_metrics(server.url, 1.0, 1 << 20) == BODY
    assert server.requests == 1


def test_body_without_content_length(server: FakeVLLM) -> None:
    server.mode = "no_length"
    assert fetch_metrics(server.url, 1.0, 1 << 20) == BODY


def test_refused_connection() -> None:
    assert _reason(f"http://127.0.0.1:{free_port()}/metrics") == "connection"


def test_unresolvable_host() -> None:
    assert _reason("http://no-such-host.invalid:8000/metrics") == "connection"


def test_closed_without_answer(server: FakeVLLM) -> None:
    server.mode = "close"
    assert _reason(server.url) == "connection"


def test_http_500(server: FakeVLLM) -> None:
    server.status = 500
    assert _reason(server.url) == "http_status"


def test_slow_headers_time_out(server: FakeVLLM) -> None:
    server.delay_s = 1.0
    started = time.monotonic()
    assert _reason(server.url, timeout_s=0.2) == "timeout"
    assert time.monotonic() - started < 0.9


def test_trickling_body_times_out_on_the_whole_request_deadline(server: FakeVLLM) -> None:
    # every read returns within the socket timeout, but the whole body takes ~3 s
    server.mode = "trickle"
    started = time.monotonic()
    assert _reason(server.url, timeout_s=0.3) == "timeout"
    assert time.monotonic() - started < 1.0


def test_truncated_body_is_a_connection_error(server: FakeVLLM) -> None:
    server.mode = "truncate"
    assert _reason(server.url) == "connection"


def test_declared_length_over_the_cap(server: FakeVLLM) -> None:
    assert _reason(server.url, max_bytes=len(BODY) - 1) == "too_large"


def test_streamed_body_over_the_cap(server: FakeVLLM) -> None:
    server.mode = "no_length"
    assert _reason(server.url, max_bytes=100) == "too_large"


def test_body_exactly_at_the_cap_is_accepted(server: FakeVLLM) -> None:
    assert fetch_metrics(server.url, 1.0, len(BODY)) == BODY


def _raw_server(response: bytes) -> tuple[str, threading.Thread, socket.socket]:
    """A one-shot server that answers any request with the raw ``response`` bytes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(response)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/metrics", thread, listener


def test_gzip_body_is_inflated_within_the_cap() -> None:
    packed = gzip.compress(BODY)
    head = f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {len(packed)}\r\nConnection: close\r\n\r\n"
    url, thread, listener = _raw_server(head.encode() + packed)
    try:
        assert fetch_metrics(url, 1.0, 1 << 20) == BODY
    finally:
        thread.join(2)
        listener.close()


def test_gzip_bomb_is_too_large() -> None:
    packed = gzip.compress(b"\n" * (4 << 20))
    head = f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {len(packed)}\r\nConnection: close\r\n\r\n"
    url, thread, listener = _raw_server(head.encode() + packed)
    try:
        assert _reason(url, max_bytes=1 << 20) == "too_large"
    finally:
        thread.join(2)
        listener.close()


def test_garbage_instead_of_http() -> None:
    url, thread, listener = _raw_server(b"\x00\x01 this is not HTTP at all\r\n\r\n")
    try:
        assert _reason(url) == "connection"
    finally:
        thread.join(2)
        listener.close()
