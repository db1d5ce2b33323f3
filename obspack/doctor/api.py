"""A read-only client of a Prometheus-compatible HTTP API (Prometheus, Thanos Query, Mimir, VictoriaMetrics).

Only GET requests and POSTed form queries (PromQL can outgrow a URL). One `httpx.Client` keeps connections
alive across the worker threads of `map`, which bounds how many requests are in flight at once.

Two kinds of failure: `DoctorError` when the server cannot be asked at all (unreachable, TLS, refused
credentials, an answer that is not the Prometheus API), which ends the run with exit code 2; and
`QueryFailed` when one request failed but the server is there (a query it rejects or that timed out, an
endpoint this backend does not have), which the caller records against that one check.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from obspack import __version__
from obspack.errors import ObspackError

T = TypeVar("T")
R = TypeVar("R")


class DoctorError(ObspackError):
    """The server could not be asked; the message says what to check."""

    exit_code = 2


class QueryFailed(Exception):
    """One request failed while the server itself answered."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Connection:
    """Where the API is and how to talk to it. `url` includes any path prefix (Mimir: .../prometheus)."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    bearer_token: str | None = None
    basic_auth: tuple[str, str] | None = None
    ca_file: Path | None = None
    insecure: bool = False
    timeout_s: float = 30.0
    concurrency: int = 8


def _tls(connection: Connection) -> ssl.SSLContext:
    if connection.insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if connection.ca_file is not None:
        try:
            return ssl.create_default_context(cafile=str(connection.ca_file))
        except (OSError, ssl.SSLError) as e:
            raise DoctorError(f"cannot read the CA file {connection.ca_file}: {e}") from None
    return ssl.create_default_context()


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat[:120] + ("..." if len(flat) > 120 else "")


class PrometheusAPI:
    """`/api/v1` of one server. Use as a context manager, or call `close()`."""

    def __init__(self, connection: Connection) -> None:
        if not connection.url.startswith(("http://", "https://")):
            raise DoctorError(f"--prometheus must be an http:// or https:// URL, not {connection.url!r}")
        self.connection = connection
        self.base = connection.url.rstrip("/")
        self.requests = 0  # how many requests were sent, for the report
        self._count = threading.Lock()
        self._timed: list[tuple[float, str]] = []
        headers = {"User-Agent": f"obspack-doctor/{__version__}", **dict(connection.headers)}
        if connection.bearer_token:
            headers["Authorization"] = f"Bearer {connection.bearer_token}"
        self._client = httpx.Client(
            headers=headers,
            auth=httpx.BasicAuth(*connection.basic_auth) if connection.basic_auth else None,
            verify=_tls(connection),
            timeout=httpx.Timeout(connection.timeout_s, pool=None),
            limits=httpx.Limits(
                max_connections=connection.concurrency, max_keepalive_connections=connection.concurrency
            ),
            follow_redirects=True,
        )

    def __enter__(self) -> PrometheusAPI:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    # -- requests -------------------------------------------------------------------------------

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET `/api/v1/<path>` (or another path under the base when it starts with '/'); its `data`."""
        return self._send("GET", path, params=params)

    def post(self, path: str, form: dict[str, Any]) -> Any:
        return self._send("POST", path, data=form)

    def _url(self, path: str) -> str:
        return f"{self.base}{path}" if path.startswith("/") else f"{self.base}/api/v1/{path}"

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        url = self._url(path)
        with self._count:
            self.requests += 1
        started = time.monotonic()
        try:
            response = self._client.request(method, url, **kwargs)
        except httpx.TimeoutException:
            raise QueryFailed(f"{path}: no answer within {self.connection.timeout_s:g}s") from None
        except httpx.ConnectError as e:
            hint = ""
            if "CERTIFICATE_VERIFY_FAILED" in str(e):
                hint = " (pass --ca-file with the server's CA, or --insecure-skip-verify)"
            raise DoctorError(f"cannot connect to {self.base}: {e}{hint}") from None
        except httpx.HTTPError as e:
            raise DoctorError(f"lost the connection to {self.base}: {e.__class__.__name__}: {e}") from None
        asked = (kwargs.get("data") or kwargs.get("params") or {}).get("query") or (
            kwargs.get("params") or {}
        )
        with self._count:
            self._timed.append((time.monotonic() - started, f"{path} {asked}"[:300]))
        return self._decode(response, path)

    def slowest(self, n: int = 5) -> tuple[tuple[float, str], ...]:
        """The `n` slowest requests so far: (seconds, path and what was asked)."""
        with self._count:
            return tuple(sorted(self._timed, reverse=True)[:n])

    def _decode(self, response: httpx.Response, path: str) -> Any:
        status = response.status_code
        if status in (401, 403):
            raise DoctorError(
                f"{self.base} refused the request ({status} {response.reason_phrase}): pass credentials with "
                "--bearer-token, --basic-auth or --header (Mimir also needs --tenant)"
            )
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or "status" not in body:
            if status == 404 or status >= 400:
                raise QueryFailed(f"{path}: HTTP {status} {_snippet(response.text)}".rstrip(), status)
            raise DoctorError(
                f"{self.base} does not answer like the Prometheus API ({path}: {_snippet(response.text)!r}); "
                "check the URL and its path prefix (Mimir: /prometheus, VictoriaMetrics cluster: "
                "/select/<tenant>/prometheus)"
            )
        if body["status"] != "success":
            reason = body.get("error") or body.get("msg") or "no reason given"
            kind = body.get("errorType")
            raise QueryFailed(f"{path}: {kind + ': ' if kind else ''}{reason}", status)
        return body.get("data")

    # -- the endpoints the doctor reads -------------------------------------------------------------

    def query(self, expr: str, at: float) -> list[dict[str, Any]]:
        """An instant query; the vector it returns (a scalar comes back as one unlabelled sample)."""
        form = {"query": expr, "time": f"{at:.3f}", "timeout": f"{int(self.connection.timeout_s)}s"}
        data = self.post("query", form)
        if data.get("resultType") == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return list(data.get("result") or [])

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        form = {
            "query": expr,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step:g}",
            "timeout": f"{int(self.connection.timeout_s)}s",
        }
        return list(self.post("query_range", form).get("result") or [])

    def label_values(self, label: str, match: str, start: float, end: float) -> list[str]:
        params = {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"}
        return sorted(self.get(f"label/{label}/values", params) or [])

    def label_names(self, matches: Iterable[str], start: float, end: float) -> list[str]:
        params = {"match[]": list(matches), "start": f"{start:.3f}", "end": f"{end:.3f}"}
        return sorted(self.get("labels", params) or [])

    # -- bounded concurrency ------------------------------------------------------------------------

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R | QueryFailed]:
        """`fn` over `items` on at most `concurrency` threads, in order. A `QueryFailed` is returned in
        place of its result; a `DoctorError` stops the run."""
        work = list(items)
        if not work:
            return []

        def call(item: T) -> R | QueryFailed:
            try:
                return fn(item)
            except QueryFailed as e:
                return e

        with ThreadPoolExecutor(max_workers=min(self.connection.concurrency, len(work))) as pool:
            futures = [pool.submit(call, item) for item in work]
            try:
                return [future.result() for future in futures]
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
