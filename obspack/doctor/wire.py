"""What the doctor's client needs below HTTP to stay bounded against any server.

- A deadline per request, on every socket operation: httpx's timeouts apply to each read or write on its
  own, so a server that trickles a byte a second (headers or body) never trips them. `DeadlineTransport`
  gives the connection pool network streams that cut each operation's timeout to what is left of the
  deadline of the request that the calling thread is sending (`deadline`), and time out once it is spent.
- A cap on bytes, before and after decompression: `read_body` reads the raw (still encoded) body, stops
  at the cap, and decompresses gzip or deflate itself with a bounded output, so neither an endless stream
  nor a gzip bomb grows memory past the cap. httpx's own decoding is never used.
- Retry-After, in seconds or as an HTTP date.
"""

from __future__ import annotations

import threading
import time
import urllib.request
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import parsedate_to_datetime
from typing import Any

import httpcore
import httpx

ENCODINGS = "gzip, deflate"  # what the client accepts; anything else is refused (see `Decoder`)

_local = threading.local()


@contextmanager
def deadline(at: float) -> Iterator[None]:
    """Socket operations of this thread end by `at` (time.monotonic()) while the block runs."""
    before = getattr(_local, "deadline", None)
    _local.deadline = at
    try:
        yield
    finally:
        _local.deadline = before


def _left(timeout: float | None, timed_out: type[Exception]) -> float | None:
    at = getattr(_local, "deadline", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise timed_out("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout))
        return _Stream(inner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, **kwargs: Any
    ) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout), **kwargs))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, **kwargs: Any
    ) -> httpcore.NetworkStream:
        return _Stream(
            self._inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout), **kwargs)
        )

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's transport whose connections honour `deadline`; the proxy (if any) is the environment's
    (HTTPS_PROXY, HTTP_PROXY, NO_PROXY) for `url`, as httpx would pick it."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(proxy=_env_proxy(url), **kwargs)
        pool = self._pool
        if not isinstance(getattr(pool, "_network_backend", None), httpcore.NetworkBackend):
            raise RuntimeError("httpcore changed: its connection pool has no _network_backend to wrap")
        pool._network_backend = _Backend(pool._network_backend)  # type: ignore[attr-defined]


def _env_proxy(url: str) -> str | None:
    parts = httpx.URL(url)
    if urllib.request.proxy_bypass(parts.host):
        return None
    return urllib.request.getproxies().get(parts.scheme) or None


# ---------------------------------------------------------------------------------------------------
# bounded bodies


class TooLarge(Exception):
    """The body is larger than the cap; the message says which side (on the wire, decompressed)."""


class Unsupported(Exception):
    """A Content-Encoding the client did not ask for."""


class Decoder:
    """Decompresses a body of one Content-Encoding, never producing more than `limit` bytes."""

    def __init__(self, encoding: str, limit: int) -> None:
        codings = [
            c.strip().lower() for c in encoding.split(",") if c.strip() and c.strip().lower() != "identity"
        ]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise Unsupported(f"Content-Encoding {encoding!r} (the doctor asks for {ENCODINGS})")
        self.limit = limit
        self.size = 0
        # 32 + 15: a zlib or gzip header, told apart by zlib; raw deflate (-15) is tried when that fails.
        self._wbits = 47 if codings else None
        self._zlib = zlib.decompressobj(self._wbits) if codings else None

    def feed(self, data: bytes) -> bytes:
        if self._zlib is None:
            return self._count(data)
        out = []
        while data:
            try:
                chunk = self._zlib.decompress(data, self.limit - self.size + 1)
            except zlib.error:
                if self.size or self._wbits != 47:
                    raise
                self._wbits = -15  # "deflate" sent as a raw stream, as some servers do
                self._zlib = zlib.decompressobj(self._wbits)
                continue
            out.append(self._count(chunk))
            data = self._zlib.unconsumed_tail
            if self._zlib.eof:  # another gzip member may follow
                data = self._zlib.unused_data
                if data:
                    self._zlib = zlib.decompressobj(self._wbits)
        return b"".join(out)

    def _count(self, chunk: bytes) -> bytes:
        self.size += len(chunk)
        if self.size > self.limit:
            raise TooLarge("decompressed")
        return chunk


def read_body(response: httpx.Response, limit: int) -> bytes:
    """The whole body of a streamed response, decompressed, at most `limit` bytes on the wire and after."""
    length = response.headers.get("content-length", "")
    if length.strip().isdigit() and int(length) > limit:
        raise TooLarge(f"Content-Length {int(length)}")
    decoder = Decoder(response.headers.get("content-encoding", ""), limit)
    wire = 0
    parts = []
    for raw in response.iter_raw():
        wire += len(raw)
        if wire > limit:
            raise TooLarge("on the wire")
        parts.append(decoder.feed(raw))
    return b"".join(parts)


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delay-seconds or an HTTP date); None when absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
