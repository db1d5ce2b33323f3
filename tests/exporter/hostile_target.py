"""A target on 127.0.0.1 that misbehaves at the socket level: each connection runs a script.

A script gets the accepted socket (the request already read) and a stop event; it must return when
the event is set, so every misbehaviour ends with the test. The scripts below are the hostile
answers the exporter is tested against.
"""

from __future__ import annotations

import gzip
import socket
import threading
import zlib
from collections.abc import Callable

Script = Callable[[socket.socket, threading.Event], None]


class HostileTarget:
    """Accepts connections on 127.0.0.1 and hands each to ``script`` in its own thread."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.stopping = threading.Event()
        self.accepted = threading.Event()  # set once a connection was accepted
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.settimeout(0.05)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/metrics"

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(5)
        self.listener.close()

    def __enter__(self) -> HostileTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.set()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(2)
                conn.recv(65536)
                self.script(conn, self.stopping)
            except OSError:
                pass  # the exporter hung up first, as it should


def head(extra: bytes = b"", length: int | None = None, status: bytes = b"200 OK") -> bytes:
    """A response head with ``Connection: close``, ``extra`` header lines and an optional Content-Length."""
    lines = b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain\r\nConnection: close\r\n" + extra
    if length is not None:
        lines += b"Content-Length: %d\r\n" % length
    return lines + b"\r\n"


def sends(data: bytes, then_wait_s: float = 0.0) -> Script:
    """Send ``data`` at once, then keep the connection open for ``then_wait_s``."""

    def script(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(data)
        stop.wait(then_wait_s)

    return script


def trickles(data: bytes, gap_s: float = 0.05, after: bytes = b"") -> Script:
    """Send ``after`` at once, then ``data`` one byte every ``gap_s`` (each recv is fast, the whole is slow)."""

    def script(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(after)
        for i in range(len(data)):
            if stop.wait(gap_s):
                return
            conn.sendall(data[i : i + 1])

    return script


def repeats(data: bytes, gap_s: float = 0.0, first: bytes = b"") -> Script:
    """Send ``first``, then ``data`` again and again until stopped."""

    def script(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(first)
        while not stop.is_set():
            conn.sendall(data)
            if gap_s:
                stop.wait(gap_s)

    return script


def resets(data: bytes) -> Script:
    """Send ``data``, then close with a TCP reset (SO_LINGER 0)."""

    def script(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(data)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    return script


def silent(conn: socket.socket, stop: threading.Event) -> None:
    """Accept, read the request, never answer."""
    stop.wait(10)


def gzip_cut_at_a_line_end(body: bytes) -> bytes:
    """A gzip stream of the first half of ``body``'s lines, flushed and cut there: no end, no trailer."""
    half = body[: body.index(b"\n", len(body) // 2) + 1]
    packer = zlib.compressobj(wbits=31)
    return packer.compress(half) + packer.flush(zlib.Z_SYNC_FLUSH)


def gzipped(body: bytes) -> bytes:
    return gzip.compress(body)
