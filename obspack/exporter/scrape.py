"""Fetch one target's /metrics text within one deadline and a size cap.

Every failure becomes a ``ScrapeError`` whose ``reason`` is one of ``REASONS``, the values of the
``reason`` label of ``obspack_target_scrape_errors_total``.

**One deadline per scrape.** ``fetch_metrics`` fixes ``deadline = now + timeout_s`` once, and every
step that can block gets only the time left until it:

* name resolution runs in a daemon thread that is waited on for the time left (``getaddrinfo``
  takes no timeout); a resolution of the same host still running from an earlier scrape is waited
  on again rather than started twice, so a dead DNS server costs a thread per host, not per scrape;
* connect is tried address by address, each with a socket timeout of the time left;
* the TLS handshake starts with the time left as socket timeout, which CPython's ssl module applies
  to the whole handshake;
* every read of the answer (status line, headers, ``1xx`` interim answers, chunk sizes, trailers,
  body) goes through ``_DeadlineReader``, which sets the socket timeout to the time left before
  each ``recv``. http.client alone gives each ``recv`` the full timeout afresh, so a target sending
  its headers one byte a second would hold the scrape forever.

A watchdog thread that closes the socket at the deadline was the other option. It was not taken
because it cannot stop a resolution or a connect in progress either, it costs a thread per scrape,
and its cut looks like a normal end of body to an answer without ``Content-Length`` (a truncated
body would then pass as complete unless every path checked the watchdog). Setting the timeout
before each ``recv`` needs no thread and fails with ``TimeoutError`` exactly where the time ran out.

**Bounded bytes.** http.client caps a header line at 64 KiB and a response at 100 headers; the body
is read in chunks and refused past ``max_bytes``, before and after gzip (a gzip body must also be
complete: a stream cut short is refused, even where it happens to end at a line break).
"""

from __future__ import annotations

import functools
import http.client
import io
import ipaddress
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from obspack import __version__

Reason = Literal["timeout", "connection", "http_status", "parse", "too_large", "too_many_series"]
REASONS: tuple[Reason, ...] = (
    "timeout",
    "connection",
    "http_status",
    "parse",
    "too_large",
    "too_many_series",
)
"""``too_many_series`` is counted by the collector (the target stays up); the others by a failed scrape."""
Fetch = Callable[[str, float, int], bytes]
"""fetch(url, timeout_s, max_bytes) -> body; raises ScrapeError."""

AddrInfo = tuple[Any, ...]

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
    """GET ``url`` and return the body; the whole request (resolve to last byte) gets ``timeout_s``.

    Raises ScrapeError: ``timeout`` past the deadline, ``connection`` when the host refuses, resets
    or closes early, ``http_status`` for anything but 200, ``too_large`` past ``max_bytes``,
    ``parse`` for a gzip body that does not inflate.
    """
    deadline = time.monotonic() + timeout_s
    try:
        return _fetch(url, deadline, max_bytes)
    except ScrapeError:
        raise
    except TimeoutError as e:
        raise ScrapeError("timeout", f"no complete answer within {timeout_s:g}s") from e
    except (OSError, http.client.HTTPException, ValueError) as e:
        raise ScrapeError("connection", f"{type(e).__name__}: {e}") from e


def _fetch(url: str, deadline: float, max_bytes: int) -> bytes:
    parts = urlsplit(url)
    host = parts.hostname or ""
    https = parts.scheme == "https"
    connection_class = http.client.HTTPSConnection if https else http.client.HTTPConnection
    conn = connection_class(host, parts.port)
    conn.response_class = functools.partial(_DeadlineResponse, deadline=deadline)  # type: ignore[assignment]
    try:
        sock = _connect(host, parts.port or (443 if https else 80), deadline)
        # With a socket set, http.client does not connect by itself (it would, without the deadline).
        conn.sock = _wrap_tls(sock, host, deadline) if https else sock
        path = (parts.path or "/metrics") + (f"?{parts.query}" if parts.query else "")
        conn.sock.settimeout(_time_left(deadline))
        conn.request("GET", path, headers=_HEADERS)
        response = conn.getresponse()
        try:
            return _read_body(response, max_bytes)
        finally:
            response.close()
    finally:
        conn.close()


def _read_body(response: http.client.HTTPResponse, max_bytes: int) -> bytes:
    if response.status != 200:
        raise ScrapeError("http_status", f"HTTP {response.status} {response.reason}")
    declared = response.length  # None without a valid Content-Length (chunked, or read to the close)
    if declared is not None and declared > max_bytes:
        raise ScrapeError("too_large", f"Content-Length {declared} is over the {max_bytes} byte cap")
    encoding = (response.getheader("Content-Encoding") or "").strip().lower()
    body = _read_capped(response, max_bytes) if declared is None else _read_exactly(response, declared)
    if declared is not None and len(body) != declared:
        raise ScrapeError("connection", f"body ended after {len(body)} of {declared} bytes")
    return _gunzip(body, max_bytes) if encoding in ("gzip", "x-gzip") else body


def _read_exactly(response: http.client.HTTPResponse, declared: int) -> bytes:
    """A body of known length (under the cap): one read of that many bytes, which the buffered reader
    receives straight into the result, read by read (each bounded by the deadline); shorter when the peer
    closes early. Reading it in chunks allocated a chunk-sized buffer per read and joined them."""
    return response.read(declared)


def _read_capped(response: http.client.HTTPResponse, cap: int) -> bytes:
    """Read the body in chunks (each read bounded by the deadline), checking the cap after each."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = response.read1(_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > cap:
            raise ScrapeError("too_large", f"body is over the {cap} byte cap")
        chunks.append(chunk)


def _time_left(deadline: float) -> float:
    """Seconds until ``deadline``; raises TimeoutError once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("deadline passed")
    return left


class _DeadlineReader(io.RawIOBase):
    """The raw stream of a response: each read waits at most until the scrape's deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        # A socket file keeps the descriptor open after http.client closes the connection object,
        # which it does right after the headers of a `Connection: close` answer.
        self._raw = sock.makefile("rb", buffering=0)
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(_time_left(self._deadline))
        return self._raw.readinto(buffer) or 0

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    """An HTTPResponse whose every read goes through a ``_DeadlineReader``."""

    def __init__(self, sock: socket.socket, *, deadline: float, **kwargs: Any) -> None:
        super().__init__(sock, **kwargs)
        self.fp.close()
        self.fp = io.BufferedReader(_DeadlineReader(sock, deadline))


def _connect(host: str, port: int, deadline: float) -> socket.socket:
    """A TCP connection to the first address of ``host`` that accepts, within the deadline."""
    error: OSError = OSError(f"{host} resolved to no address")
    for family, kind, proto, _, address in _resolve(host, port, deadline):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(_time_left(deadline))
            sock.connect(address)
        except TimeoutError:
            sock.close()
            raise
        except OSError as e:
            sock.close()
            error = e
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    raise error


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The default TLS context (system CAs, hostname check), made once: loading the CAs takes ~0.1 s."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


def _wrap_tls(sock: socket.socket, host: str, deadline: float) -> socket.socket:
    try:
        context = _tls_context()
        sock.settimeout(_time_left(deadline))
        return context.wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise


@dataclass
class _Lookup:
    """One getaddrinfo call running in its own thread; ``done`` is set when ``result`` holds its outcome."""

    done: threading.Event = field(default_factory=threading.Event)
    result: list[AddrInfo] | OSError | None = None


_lookups: dict[tuple[str, int], _Lookup] = {}
_lookups_lock = threading.Lock()


def _resolve(host: str, port: int, deadline: float) -> list[AddrInfo]:
    """getaddrinfo for a TCP connection, waiting at most until ``deadline`` for a name to resolve."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:  # a literal address: no lookup, nothing can hang
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    key = (host, port)
    with _lookups_lock:
        lookup = _lookups.get(key)
        if lookup is None:
            lookup = _lookups[key] = _Lookup()
            threading.Thread(target=_lookup, args=(key, lookup), name="obspack-resolve", daemon=True).start()
    if not lookup.done.wait(_time_left(deadline)):
        raise TimeoutError(f"{host} did not resolve in time")
    if isinstance(lookup.result, OSError):  # a copy: other scrapes may raise the same failure
        raise type(lookup.result)(*lookup.result.args)
    return lookup.result or []


def _lookup(key: tuple[str, int], lookup: _Lookup) -> None:
    try:
        lookup.result = socket.getaddrinfo(*key, type=socket.SOCK_STREAM)
    except OSError as e:
        lookup.result = e
    finally:
        with _lookups_lock:
            _lookups.pop(key, None)
        lookup.done.set()


def _gunzip(body: bytes, cap: int) -> bytes:
    """Inflate a whole gzip body without ever holding more than ``cap`` + 1 bytes of output."""
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(body, cap + 1)
    except zlib.error as e:
        raise ScrapeError("parse", f"bad gzip body: {e}") from e
    if len(out) > cap:
        raise ScrapeError("too_large", f"inflated body is over the {cap} byte cap")
    if not inflater.eof:
        raise ScrapeError("parse", "gzip body ends before the end of its stream: truncated")
    return out
