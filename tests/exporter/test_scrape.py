"""Tests of obspack.exporter.scrape against real sockets on 127.0.0.1."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from obspack.demo.fake_vllm import FakeVLLM
from obspack.demo.processes import free_port
from obspack.exporter.scrape import ScrapeError, fetch_metrics

from .hostile_target import (
    HostileTarget,
    Script,
    gzip_cut_at_a_line_end,
    gzipped,
    head,
    repeats,
    resets,
    sends,
    silent,
    trickles,
)

BODY = b'# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 1\n' * 50


@pytest.fixture
def server() -> Iterator[FakeVLLM]:
    fake = FakeVLLM(payload=BODY)
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


# ---------------------------------------------------------------------------------------------------
# Hostile targets: one deadline per scrape, bounded bytes, one reason each

DEADLINE_S = 0.2
CHUNKED = b"Transfer-Encoding: chunked\r\n"


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (trickles(head(b"X-Slow: " + b"a" * 200 + b"\r\n", len(BODY)) + BODY), "timeout"),
        (trickles(BODY, after=head(length=len(BODY))), "timeout"),
        (trickles(BODY, after=head()), "timeout"),
        (silent, "timeout"),
        (trickles(b"0" * 40 + b"5\r\nabcde\r\n", after=head(CHUNKED)), "timeout"),
        (repeats(b"4\r\n# x\n\r\n", gap_s=0.01, first=head(CHUNKED)), "timeout"),
        (repeats(b"X-Trailer: y\r\n", gap_s=0.001, first=head(CHUNKED) + b"0\r\n"), "timeout"),
        (repeats(b"HTTP/1.1 100 Continue\r\n\r\n"), "timeout"),
        (sends(head(length=2 * len(BODY)) + BODY, then_wait_s=5), "timeout"),
        (repeats(b"10000\r\n" + b"#" * 0xFFFF + b"\n\r\n", first=head(CHUNKED)), "too_large"),
        (sends(head(length=2 * len(BODY)) + BODY), "connection"),
        (resets(head(length=len(BODY)) + BODY[:1000]), "connection"),
        (sends(b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 150 + b"\r\n"), "connection"),
        (sends(b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70000 + b"\r\n\r\n"), "connection"),
        (sends(head(b"Location: /metrics\r\n", 0, status=b"302 Found")), "http_status"),
        (sends(head(status=b"204 No Content")), "http_status"),
        (sends(head(b"Content-Encoding: gzip\r\n", len(BODY)) + BODY), "parse"),
        (sends(head(b"Content-Encoding: gzip\r\n") + gzip_cut_at_a_line_end(BODY)), "parse"),
    ],
    ids=[
        "headers-trickle",
        "body-trickle",
        "body-trickle-no-length",
        "accept-never-answer",
        "chunk-size-line-trickles",
        "chunks-never-end",
        "trailers-never-end",
        "100-continue-flood",
        "content-length-lies-connection-kept",
        "chunks-never-end-fast",
        "content-length-lies-connection-closed",
        "reset-mid-body",
        "150-headers",
        "70k-header-line",
        "redirect-loop",
        "204",
        "gzip-header-plain-body",
        "gzip-cut-at-a-line-end",
    ],
)
def test_hostile_target_fails_with_one_reason_within_the_deadline(script: Script, reason: str) -> None:
    with HostileTarget(script) as target:
        started = time.monotonic()
        assert _reason(target.url, timeout_s=DEADLINE_S, max_bytes=1 << 20) == reason
        assert time.monotonic() - started < DEADLINE_S + 0.5


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (sends(head(length=0)), b""),
        (sends(b"HTTP/1.0 200 OK\r\n\r\n" + BODY), BODY),
        (sends(head(b"Content-Length: -5\r\n") + BODY), BODY),
        (
            sends(
                head(CHUNKED)
                + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (BODY[:7], BODY[7:]))
                + b"0\r\n\r\n"
            ),
            BODY,
        ),
        (sends(head(b"Content-Encoding: x-gzip\r\n") + gzipped(BODY)), BODY),
        (sends(head(b"Content-Encoding: br\r\n", len(BODY)) + BODY), BODY),
        (trickles(BODY[-40:], gap_s=0.001, after=head(length=len(BODY)) + BODY[:-40]), BODY),
    ],
    ids=[
        "empty-200",
        "http-1.0-read-to-close",
        "negative-length",
        "chunked",
        "x-gzip",
        "unknown-encoding-as-is",
        "short-trickle",
    ],
)
def test_odd_but_complete_answers_next_to_them_are_read(script: Script, expected: bytes) -> None:
    with HostileTarget(script) as target:
        assert fetch_metrics(target.url, 2.0, 1 << 20) == expected


def test_a_name_is_resolved_within_the_deadline(server: FakeVLLM) -> None:
    assert fetch_metrics(server.url.replace("127.0.0.1", "localhost"), 2.0, 1 << 20) == BODY


def test_a_hung_name_lookup_times_out_and_is_not_started_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """getaddrinfo takes no timeout: a resolver that never answers stands in for a dead DNS server."""
    release = threading.Event()
    lookups: list[str] = []

    def hung_getaddrinfo(host: str, *args: object, **kwargs: object) -> list:
        lookups.append(host)
        release.wait(5)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", hung_getaddrinfo)
    try:
        for _ in range(2):
            started = time.monotonic()
            assert _reason("http://vllm.example:8000/metrics", timeout_s=DEADLINE_S) == "timeout"
            assert time.monotonic() - started < DEADLINE_S + 0.5
        assert lookups == ["vllm.example"]  # the second scrape waited on the lookup still running
    finally:
        release.set()
    # the lookup's failure, once it comes, is a connection error (whether shared or asked afresh)
    assert _reason("http://vllm.example:8000/metrics", timeout_s=DEADLINE_S) == "connection"


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (silent, "timeout"),
        (trickles(b"\x16\x03\x01\x00\x05hello"), "timeout"),
        (sends(head(length=0)), "connection"),
    ],
    ids=["no-handshake-answer", "handshake-trickles", "plain-http-on-https"],
)
def test_https_handshake_is_within_the_same_deadline(script: Script, reason: str) -> None:
    with HostileTarget(script) as target:
        started = time.monotonic()
        assert _reason(target.url.replace("http://", "https://"), timeout_s=DEADLINE_S) == reason
        assert time.monotonic() - started < DEADLINE_S + 0.5
