"""Fetch one target's /metrics text with a whole-request deadline and a size cap.

Every failure becomes a ``ScrapeError`` whose ``reason`` is one of ``REASONS``, the values of the
``reason`` label of ``obspack_target_scrape_errors_total``.
"""

from __future__ import annotations

import http.client
import socket
import time
import zlib
from collections.abc import Callable
from typing import Literal
from urllib.parse import urlsplit

from obspack import __version__

Reason = Literal["timeout", "connection", "http_status", "parse", "too_large"]
REASONS: tuple[Reason, ...] = ("timeout", "connection", "http_status", "parse", "too_large")
Fetch = Callable[[str, float, int], bytes]
"""fetch(url, timeout_s, max_bytes) -> body; raises ScrapeError."""

_CHUNK = 1 << 20
_HEADERS = {
    "Accept": "text/plain;version=0.0.4;q=1,*/*;q=0.1",
    "Accept-Encoding": "identity",
    "User-Agent": f"obspack-exporter/{__version__}",
}


class ScrapeError(Exception):
    """A target could not be scraped; ``reason`` says which way it failed."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason: Reason = reason


def fetch_metrics(url: str, timeout_s: float, max_bytes: int) -> bytes:
    """GET ``url`` and return the body; the whole request (connect to last byte) gets ``timeout_s``.

    Raises ScrapeError: ``timeout`` past the deadline, ``connection`` when the host refuses, resets
    or closes early, ``http_status`` for anything but 200, ``too_large`` past ``max_bytes``.
    """
    deadline = time.monotonic() + timeout_s
    try:
        return _fetch(url, deadline, timeout_s, max_bytes)
    except ScrapeError:
        raise
    except TimeoutError as e:
        raise ScrapeError("timeout", f"no complete answer within {timeout_s:g}s") from e
    except (OSError, http.client.HTTPException, ValueError) as e:
        raise ScrapeError("connection", f"{type(e).__name__}: {e}") from e


def _fetch(url: str, deadline: float, timeout_s: float, max_bytes: int) -> bytes:
    parts = urlsplit(url)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = connection_class(parts.hostname or "", parts.port, timeout=timeout_s)
    try:
        path = (parts.path or "/metrics") + (f"?{parts.query}" if parts.query else "")
        conn.request("GET", path, headers=_HEADERS)
        sock = conn.sock
        _set_remaining(sock, deadline)
        response = conn.getresponse()
        if response.status != 200:
            raise ScrapeError("http_status", f"HTTP {response.status} {response.reason}")
        declared = response.getheader("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > max_bytes:
            raise ScrapeError("too_large", f"Content-Length {declared} is over the {max_bytes} byte cap")
        gzipped = (response.getheader("Content-Encoding") or "").lower() == "gzip"
        body = _read_capped(response, sock, deadline, max_bytes)
        if declared is not None and declared.isdigit() and len(body) != int(declared):
            raise ScrapeError("connection", f"body ended after {len(body)} of {declared} bytes")
        return _gunzip(body, max_bytes) if gzipped else body
    finally:
        conn.close()


def _read_capped(
    response: http.client.HTTPResponse, sock: socket.socket | None, deadline: float, cap: int
) -> bytes:
    """Read the body in chunks, checking the deadline between reads and the cap after each."""
    chunks: list[bytes] = []
    size = 0
    while True:
        _set_remaining(sock, deadline)
        chunk = response.read1(_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > cap:
            raise ScrapeError("too_large", f"body is over the {cap} byte cap")
        chunks.append(chunk)


def _set_remaining(sock: socket.socket | None, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("deadline passed")
    if sock is not None:
        sock.settimeout(remaining)


def _gunzip(body: bytes, cap: int) -> bytes:
    """Inflate a gzip body without ever holding more than ``cap`` + 1 bytes of output."""
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(body, cap + 1)
    except zlib.error as e:
        raise ScrapeError("parse", f"bad gzip body: {e}") from e
    if len(out) > cap:
        raise ScrapeError("too_large", f"inflated body is over the {cap} byte cap")
    return out
