"""Threaded HTTP serving of a registry: ``/metrics``, plus ``/healthz`` for kubelet probes.

Each request runs in its own daemon thread, so concurrent Prometheus scrapes are served side by
side (the collector makes them share in-flight target fetches). ``/healthz`` answers without
touching the targets, so liveness probes never add load on vLLM.
"""

from __future__ import annotations

import functools
import gzip
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import exposition, make_wsgi_app
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics import exposition as om
from prometheus_client.registry import CollectorRegistry

from obspack.exporter import exposition as fast

_INDEX = b"obspack exporter: metrics at /metrics, liveness at /healthz\n"


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    block_on_close = False


class _QuietHandler(WSGIRequestHandler):
    timeout = 30  # seconds a client may take to send its request before its thread gives up
    # wsgiref writes the status line, Date, Server, the other headers and the body in five writes. Unbuffered,
    # each was a send of its own, and Nagle's algorithm held the later ones until the client acknowledged
    # the first (up to its delayed-ACK timer). With the default buffer (8 KiB) the headers leave in one send,
    # with the body when it fits; TCP_NODELAY sends a larger body at once after them.
    wbufsize = -1
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        pass


@dataclass
class MetricsServer:
    """A running server; ``port`` is the bound port (useful when asked for port 0)."""

    httpd: WSGIServer
    thread: threading.Thread

    @property
    def host(self) -> str:
        return str(self.httpd.server_address[0])

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def shutdown(self) -> None:
        """Stop accepting requests and close the listening socket."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def parse_listen(value: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[v6]:PORT`` for IPv6, ``:PORT`` for all interfaces) into host and port."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen must be HOST:PORT with a port from 0 to 65535, got {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"--listen: put an IPv6 address in brackets, like [::]:10025, got {value!r}")
    return host or "0.0.0.0", int(port)


class _Collected:
    """Families already collected, as a registry for prometheus_client's writers (a second collect would
    scrape the targets again)."""

    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> list[Metric]:
        return self.metrics


def _fast_writer(encoder: Callable[..., bytes]) -> Callable[[list[Metric]], bytes] | None:
    """obspack's writer for the format prometheus_client chose from the Accept header, where it has one:
    the text format 0.0.4, or OpenMetrics 1.0.0 with the default name escaping (what Prometheus asks for)."""
    if encoder is exposition.generate_latest:
        return fast.text
    if isinstance(encoder, functools.partial) and encoder.keywords.get("escaping") == om.UNDERSCORES:
        if encoder.func is exposition.generate_latest:
            return fast.text
        if encoder.func is om.generate_latest and encoder.keywords.get("version") == "1.0.0":
            return fast.openmetrics
    return None


def metrics_app(registry: CollectorRegistry) -> Callable:
    """/metrics as prometheus_client's WSGI app serves it (format from Accept, gzip from
    Accept-Encoding, the library's headers), the lines written by obspack.exporter.exposition."""
    library = make_wsgi_app(registry)

    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "GET" or "name[]" in environ.get("QUERY_STRING", ""):
            return library(environ, start_response)
        encoder, content_type = exposition.choose_encoder(environ.get("HTTP_ACCEPT", ""))
        writer = _fast_writer(encoder)
        if writer is None:
            return library(environ, start_response)
        metrics = list(registry.collect())
        try:
            output = writer(metrics)
        except fast.NotPlain:
            output = encoder(_Collected(metrics))
        headers = [("Content-Type", content_type)]
        if exposition.gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING", "")):
            # Level 1, not the library's 9: a tenth of the CPU on every Prometheus scrape (which always
            # asks for gzip) for an answer about 15% larger; the inflated bytes are the same. No timestamp in
            # the gzip header (mtime 0, "none"): the same metrics give the same bytes whatever the second.
            output = gzip.compress(output, compresslevel=1, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [output]

    return app


def make_app(registry: CollectorRegistry) -> Callable:
    """The WSGI app: metrics at /metrics, 'ok' at /healthz, a hint at /, 404 elsewhere."""
    metrics = metrics_app(registry)

    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            return metrics(environ, start_response)
        if path in ("/healthz", "/"):
            body = b"ok\n" if path == "/healthz" else _INDEX
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
            return [body]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found: try /metrics\n"]

    return app


def start_server(host: str, port: int, registry: CollectorRegistry) -> MetricsServer:
    """Bind ``host:port`` and serve ``registry`` from a daemon thread. Raises OSError if binding fails."""

    class Server(_ThreadingServer):
        address_family = _family(host, port)

    httpd = make_server(host, port, make_app(registry), Server, handler_class=_QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.1,), name="obspack-http", daemon=True)
    thread.start()
    return MetricsServer(httpd, thread)


def _family(host: str, port: int) -> socket.AddressFamily:
    """IPv6 when ``host`` resolves only to IPv6 (``::``), else IPv4."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    families = {info[0] for info in infos}
    return socket.AF_INET if socket.AF_INET in families else socket.AF_INET6
