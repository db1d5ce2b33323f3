"""A read-only client of a Prometheus-compatible HTTP API (Prometheus, Thanos Query, Mimir, VictoriaMetrics).

Only GET requests and POSTed form queries (PromQL can outgrow a URL). One `httpx.Client` keeps connections
alive across the worker threads of `map`, which bounds how many requests are in flight at once.

Every server is treated as hostile, and every request is bounded:

- time: a deadline per request (`timeout_s`, headers and body together, retries included; wire.py) and
  one for the whole run (`max_time_s`), after which nothing more is asked;
- bytes: at most `max_bytes` on the wire and after decompression (wire.py);
- shape: every answer is checked against its endpoint's shape before it is used (answers.py);
- retries: a 429 or 503 (and 502, 504, a connection that broke off) is asked again at most `retries`
  times, after its Retry-After (or a short backoff) when that is at most `MAX_WAIT_S` and fits in the
  request's deadline;
- secrets: credentials in the URL are taken out of it and sent as basic auth; the URL is shown with
  `***` for the password, and any credential the server echoes back is masked in every message.

Two kinds of failure: `DoctorError` when the server cannot be asked at all (unreachable, TLS, refused
credentials, an answer that is not the Prometheus API, a redirect, many requests in a row unanswered), which
ends the run with exit code 2; and `QueryFailed` when one request failed but the server is there (a query it
rejects, an answer too large or of the wrong shape, no answer in time), which the caller records against
that one check.
"""

from __future__ import annotations

import base64
import re
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from obspack import __version__
from obspack.doctor import answers, wire
from obspack.durations import format_s
from obspack.errors import ObspackError

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MAX_WAIT_S = 5.0  # the longest Retry-After honoured
BACKOFF_S = 0.2  # the wait before a retry without Retry-After, doubled each time
UNANSWERED_IN_A_ROW = 16  # requests in a row without an answer: the server stopped answering
RETRIED = (429, 502, 503, 504)


class DoctorError(ObspackError):
    """The server could not be asked; the message says what to check."""

    exit_code = 2


# Why a request failed (QueryFailed.kind).
ABSENT = "absent"  # the server does not serve this endpoint (404, or a plain-text 4xx)
REJECTED = "rejected"  # the server answered with an API error (a query it refuses)
UNAVAILABLE = "unavailable"  # no answer: 429, 5xx, no answer in time, a connection broken off
SHAPE = "shape"  # an answer not in its endpoint's shape
TOO_LARGE = "too large"
NOT_ASKED = "not asked"  # the run's --max-time was spent


class QueryFailed(Exception):
    """One request failed while the server itself answered."""

    def __init__(self, message: str, status: int | None = None, kind: str = REJECTED) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind

    @property
    def answered(self) -> bool:
        """The server answered on purpose (it does not serve this, or refuses this query)."""
        return self.kind in (ABSENT, REJECTED)


@dataclass(frozen=True)
class Connection:
    """Where the API is and how to talk to it. `url` includes any path prefix (Mimir: .../prometheus) and
    may hold USER:PASSWORD@ (sent as basic auth, never shown)."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    bearer_token: str | None = None
    basic_auth: tuple[str, str] | None = None
    ca_file: Path | None = None
    insecure: bool = False
    timeout_s: float = 30.0  # the deadline of one request, headers, body and retries together
    concurrency: int = 8
    max_bytes: int = DEFAULT_MAX_BYTES  # the largest answer, on the wire and decompressed
    max_time_s: float | None = None  # the whole run: nothing is asked after this many seconds
    retries: int = 2


def redact(url: str) -> str:
    """`url` with the password of its user info replaced by ***."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, _, host = parts.netloc.rpartition("@")
    user, sep, _ = userinfo.partition(":")
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}{':***' if sep else ''}@{host}"))


def _credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """`url` without user info, and the user and password it held."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    plain = urllib.parse.urlunsplit(parts._replace(netloc=host))
    return plain, (urllib.parse.unquote(user), urllib.parse.unquote(password))


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


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Text from a server made safe for a terminal: control characters (escape sequences) shown as \\xNN."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _snippet(text: str, size: int = 120) -> str:
    flat = " ".join(printable(text).split())
    return flat[:size] + ("..." if len(flat) > size else "")


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g}{unit}" if unit == "B" or n != int(n) else f"{int(n)}{unit}"
        n /= 1024
    raise AssertionError("unreachable")


class PrometheusAPI:
    """`/api/v1` of one server. Use as a context manager, or call `close()`."""

    def __init__(self, connection: Connection) -> None:
        url, in_url = _credentials(connection.url.strip())
        self.shown = redact(connection.url.strip())  # the URL as every message shows it
        if not url.startswith(("http://", "https://")):
            raise DoctorError(f"--prometheus must be an http:// or https:// URL, not {self.shown!r}")
        if in_url and connection.basic_auth:
            raise DoctorError("give the credentials in the --prometheus URL or with --basic-auth, not both")
        basic = in_url or connection.basic_auth
        self.connection = connection
        self.base = url.rstrip("/")
        self.requests = 0  # how many requests were sent (retries included), for the report
        self.answered = 0  # requests that got a successful answer
        self.failed = 0  # requests that failed (QueryFailed)
        self.last_failure = ""
        self._count = threading.Lock()
        self._timed: list[tuple[float, str]] = []
        self._in_a_row = 0  # requests without an answer since the last answer
        self._stopped: str | None = None  # why nothing more is asked
        self._ends = time.monotonic() + connection.max_time_s if connection.max_time_s else None
        headers = {
            "User-Agent": f"obspack-doctor/{__version__}",
            "Accept-Encoding": wire.ENCODINGS,
            **dict(connection.headers),
        }
        if connection.bearer_token:
            headers["Authorization"] = f"Bearer {connection.bearer_token}"
        secrets = [connection.bearer_token or ""]
        secrets += [value for _, value in connection.headers if len(value) >= 8]
        if basic:
            secrets += [basic[1], base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()]
        self._secrets = sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True)
        try:
            transport = wire.DeadlineTransport(
                self.base,
                verify=_tls(connection),
                limits=httpx.Limits(
                    max_connections=connection.concurrency, max_keepalive_connections=connection.concurrency
                ),
            )
            self._client = httpx.Client(
                headers=headers,
                auth=httpx.BasicAuth(*basic) if basic else None,
                timeout=httpx.Timeout(connection.timeout_s, pool=None),
                transport=transport,
                follow_redirects=False,
            )
        except (ValueError, httpx.InvalidURL) as e:
            raise DoctorError(f"cannot use the proxy for {self.shown}: {self._mask(str(e))}") from None

    def __enter__(self) -> PrometheusAPI:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def _mask(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    # -- requests -------------------------------------------------------------------------------

    def get(self, path: str, params: dict[str, Any] | None = None, shape: str | None = None) -> Any:
        """GET `/api/v1/<path>` (or another path under the base when it starts with '/'); its `data`,
        checked against `shape` (answers.py) when one is given."""
        return self._send("GET", path, shape, params=params)

    def post(self, path: str, form: dict[str, Any], shape: str | None = None) -> Any:
        return self._send("POST", path, shape, data=form)

    def _url(self, path: str) -> str:
        return f"{self.base}{path}" if path.startswith("/") else f"{self.base}/api/v1/{path}"

    def _send(self, method: str, path: str, shape: str | None, **kwargs: Any) -> Any:
        started = time.monotonic()
        deadline = started + self.connection.timeout_s
        if self._ends is not None:
            deadline = min(deadline, self._ends)
        try:
            data = self._ask(method, path, deadline, **kwargs)
            result = data if shape is None else self._shaped(shape, data, path)
        except QueryFailed as e:
            self._tally(e)
            raise
        self._tally(None)
        asked = (kwargs.get("data") or kwargs.get("params") or {}).get("query") or (
            kwargs.get("params") or {}
        )
        with self._count:
            self._timed.append((time.monotonic() - started, self._mask(f"{path} {asked}"[:300])))
        return result

    def _shaped(self, shape: str, data: Any, path: str) -> Any:
        try:
            return answers.check(shape, data)
        except answers.WrongShape as e:
            raise QueryFailed(f"{path}: not an answer of this endpoint's shape: {e}", kind=SHAPE) from None

    def _tally(self, failure: QueryFailed | None) -> None:
        """Count answers and failures; many requests in a row without an answer stop the run."""
        with self._count:
            if failure is None:
                self.answered += 1
                self._in_a_row = 0
                return
            self.failed += 1
            self.last_failure = str(failure)
            if failure.kind != UNAVAILABLE:
                if failure.answered:
                    self._in_a_row = 0
                return
            self._in_a_row += 1
            if self._in_a_row >= UNANSWERED_IN_A_ROW and self._stopped is None:
                self._stopped = (
                    f"{self.shown} stopped answering: {self._in_a_row} requests in a row got no answer "
                    f"(the last: {failure})"
                )
        if self._stopped is not None:
            raise DoctorError(self._stopped)

    def _ask(self, method: str, path: str, deadline: float, **kwargs: Any) -> Any:
        """The `data` of one request's answer, asked again after a 429 or 503 within the bounds."""
        attempt = 0
        while True:
            if self._stopped is not None:
                raise DoctorError(self._stopped)
            if self._ends is not None and time.monotonic() >= self._ends:
                raise QueryFailed(
                    f"{path}: not asked: the run's --max-time of {format_s(self.connection.max_time_s or 0)} "
                    "is spent",
                    kind=NOT_ASKED,
                )
            with self._count:
                self.requests += 1
            try:
                status, headers, body = self._exchange(method, path, deadline, **kwargs)
            except _BrokenOff as e:
                failure, wait = QueryFailed(f"{path}: {e}", kind=UNAVAILABLE), None
            else:
                if status not in RETRIED or _timed_out_query(body):
                    return self._decode(status, body, path)
                failure, wait = None, wire.retry_after(headers.get("retry-after"))
            backoff = BACKOFF_S * 2**attempt if wait is None else wait
            fits = backoff <= MAX_WAIT_S and time.monotonic() + backoff < deadline
            if attempt < self.connection.retries and fits:
                time.sleep(backoff)
                attempt += 1
                continue
            if failure is not None:
                raise failure
            try:
                return self._decode(status, body, path)
            except QueryFailed as e:
                why = f"asked to retry after {format_s(wait)}" if wait is not None else "no Retry-After"
                tried = f"asked {attempt + 1} times" if attempt else "not asked again"
                raise QueryFailed(f"{e} ({tried}: {why})", e.status, e.kind) from None

    def _exchange(
        self, method: str, path: str, deadline: float, **kwargs: Any
    ) -> tuple[int, httpx.Headers, bytes]:
        """Status, headers and the whole (decompressed) body of one request, within `deadline`."""
        limit = self.connection.max_bytes
        try:
            with wire.deadline(deadline), self._client.stream(method, self._url(path), **kwargs) as response:
                if response.is_redirect:
                    where = redact(response.headers.get("location", "nowhere"))
                    raise DoctorError(
                        f"{self.shown} answered {path} with a redirect ({response.status_code}) to "
                        f"{self._mask(_snippet(where, 200))}: the doctor follows none; give the final URL "
                        "as --prometheus"
                    )
                return response.status_code, response.headers, wire.read_body(response, limit)
        except httpx.TimeoutException:
            budget = self._ends is not None and deadline >= self._ends and time.monotonic() >= self._ends
            within = (
                f"the run's --max-time of {format_s(self.connection.max_time_s or 0)}"
                if budget
                else f"{format_s(self.connection.timeout_s)} (--timeout)"
            )
            raise QueryFailed(
                f"{path}: no whole answer within {within}", kind=NOT_ASKED if budget else UNAVAILABLE
            ) from None
        except httpx.ConnectError as e:
            hint = ""
            if "CERTIFICATE_VERIFY_FAILED" in str(e):
                hint = " (pass --ca-file with the server's CA, or --insecure-skip-verify)"
            raise DoctorError(
                f"cannot connect to {self.shown}: {self._mask(_snippet(str(e), 300))}{hint}"
            ) from None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as e:
            raise _BrokenOff(
                f"the connection broke off: {self._mask(_snippet(str(e) or type(e).__name__))}"
            ) from None
        except httpx.HTTPError as e:
            raise DoctorError(
                f"lost the connection to {self.shown}: {e.__class__.__name__}: {self._mask(_snippet(str(e)))}"
            ) from None
        except wire.TooLarge as e:
            raise QueryFailed(
                f"{path}: the answer is larger than {size(limit)} ({e}); raise --max-bytes if it should be",
                kind=TOO_LARGE,
            ) from None
        except wire.Unsupported as e:
            raise QueryFailed(f"{path}: the answer came in an unasked {e}", kind=SHAPE) from None
        except Exception as e:  # zlib.error: a body that does not decompress
            if type(e).__module__ != "zlib":
                raise
            raise QueryFailed(f"{path}: the answer does not decompress: {e}", kind=SHAPE) from None

    def slowest(self, n: int = 5) -> tuple[tuple[float, str], ...]:
        """The `n` slowest requests so far: (seconds, path and what was asked)."""
        with self._count:
            return tuple(sorted(self._timed, reverse=True)[:n])

    def _decode(self, status: int, body: bytes, path: str) -> Any:
        if status in (401, 403):
            raise DoctorError(
                f"{self.shown} refused the request ({status} {httpx.codes.get_reason_phrase(status)}): pass "
                "credentials with --bearer-token, --basic-auth or --header (Mimir also needs --tenant)"
            )
        text = body.decode("utf-8", errors="replace")
        try:
            payload = answers.parse(body)
        except ValueError:
            payload = None
        except answers.WrongShape as e:
            raise QueryFailed(f"{path}: {e}", status, SHAPE) from None
        if not isinstance(payload, dict) or "status" not in payload:
            shown = self._mask(_snippet(text))
            if status in RETRIED or status >= 500:
                raise QueryFailed(f"{path}: HTTP {status} {shown}".rstrip(), status, UNAVAILABLE)
            if status >= 400:
                raise QueryFailed(f"{path}: HTTP {status} {shown}".rstrip(), status, ABSENT)
            said = repr(shown) if shown else f"an empty answer, HTTP {status}"
            raise DoctorError(
                f"{self.shown} does not answer like the Prometheus API ({path}: {said}); "
                "check the URL and its path prefix (Mimir: /prometheus, VictoriaMetrics cluster: "
                "/select/<tenant>/prometheus)"
            )
        try:
            envelope = answers.check("envelope", payload, "answer")
        except answers.WrongShape as e:
            raise QueryFailed(f"{path}: not a Prometheus API answer: {e}", status, SHAPE) from None
        if envelope["status"] != "success":
            said = envelope.get("error") or envelope.get("msg") or "no reason given"
            reason = self._mask(_snippet(said, 300))
            kind = _snippet(envelope.get("errorType") or "", 40)
            unavailable = status in RETRIED or kind in ("timeout", "unavailable")
            message = f"{path}: {kind + ': ' if kind else ''}{reason}"
            raise QueryFailed(message, status, UNAVAILABLE if unavailable else REJECTED)
        return envelope.get("data")

    # -- the endpoints the doctor reads -------------------------------------------------------------

    def _timeout(self) -> str:
        t = self.connection.timeout_s
        return f"{int(t)}s" if t == int(t) else f"{max(1, round(t * 1000))}ms"

    def query(self, expr: str, at: float) -> list[dict[str, Any]]:
        """An instant query; the vector it returns (a scalar comes back as one unlabelled sample)."""
        form = {"query": expr, "time": f"{at:.3f}", "timeout": self._timeout()}
        data = self.post("query", form, shape="query")
        kind = data["resultType"]
        if kind in ("string",):
            raise QueryFailed(f"query: a {kind} result, not a vector", kind=SHAPE)
        result = self._shaped(kind, data["result"], "query")
        if kind == "scalar":
            return [{"metric": {}, "value": result}]
        return list(result)

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        form = {
            "query": expr,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step:g}",
            "timeout": self._timeout(),
        }
        data = self.post("query_range", form, shape="query")
        if data["resultType"] != "matrix":
            raise QueryFailed(f"query_range: a {data['resultType']} result, not a matrix", kind=SHAPE)
        return list(self._shaped("matrix", data["result"], "query_range"))

    def label_values(self, label: str, match: str, start: float, end: float) -> list[str]:
        params = {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"}
        return sorted(self.get(f"label/{label}/values", params, shape="names") or [])

    def label_names(self, matches: Iterable[str], start: float, end: float) -> list[str]:
        params = {"match[]": list(matches), "start": f"{start:.3f}", "end": f"{end:.3f}"}
        return sorted(self.get("labels", params, shape="names") or [])

    def alerts(self) -> list[dict[str, Any]]:
        """The alerts pending or firing now (`/api/v1/alerts`): `labels`, `state`, `annotations`,
        `activeAt`, `value`."""
        return list(self.get("alerts", shape="alerts")["alerts"])

    def answers_since(self, mark: tuple[int, int]) -> tuple[int, int]:
        """(answered, failed) since `mark`, an earlier value of `tally`."""
        answered, failed = self.tally
        return answered - mark[0], failed - mark[1]

    @property
    def tally(self) -> tuple[int, int]:
        with self._count:
            return self.answered, self.failed

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


class _BrokenOff(Exception):
    """The connection broke off before the whole answer came (asked again within the bounds)."""


def _timed_out_query(body: bytes) -> bool:
    """A Prometheus query that ran out of its own time: asking again costs the server as much."""
    return b'"errorType":"timeout"' in body.replace(b" ", b"")[:200]
