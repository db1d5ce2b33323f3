"""The doctor against hostile servers (real sockets on 127.0.0.1): every answer is bounded in bytes (on the
wire and decompressed) and time (per request and per run), checked for its shape, retried only within
bounds; a check that could not be asked is never a pass; and secrets are never printed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from obspack.cli import app
from obspack.demo.processes import free_port
from obspack.doctor.api import Connection, PrometheusAPI, QueryFailed
from obspack.doctor.backends import detect
from tests.doctor.fakes import (
    Answer,
    Request,
    empty_prometheus,
    endless_vector,
    first_query,
    gzip_bomb,
    serve,
    success,
    vector,
)
from tests.support import packs

runner = CliRunner()
MIB = 1024 * 1024


@pytest.fixture(autouse=True)
def rendered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command renders the default pack once for all these tests (rendering is not what they check)."""
    monkeypatch.setattr(
        "obspack.cli._pack", lambda config: (packs.config_of("defaults"), packs.pack("defaults"))
    )


def doctor(url: str, *args: str):
    return runner.invoke(app, ["doctor", "--prometheus", url, *args])


def after_first(hostile: Callable[[Request], Answer]) -> Callable[[Request], Answer]:
    """An empty Prometheus that answers the doctor's first query, then `hostile` for everything else."""
    return lambda r: empty_prometheus(r) if first_query(r) else hostile(r)


def verdict(output: str) -> str:
    return output.strip().splitlines()[-1]


# ---------------------------------------------------------------------------------------------------
# bytes


def test_an_endless_answer_is_cut_at_the_cap_and_a_smaller_one_is_read() -> None:
    def answer(request: Request) -> Answer:
        if request.form.get("query") == ["small"]:
            return Answer(body=vector(({"pod": "p"}, 1)))
        return Answer(stream=endless_vector)

    with serve(answer) as fake, PrometheusAPI(Connection(fake.url, max_bytes=MIB, timeout_s=5)) as api:
        with pytest.raises(QueryFailed, match=r"^query: the answer is larger than 1MiB \(on the wire\)"):
            api.query("endless", 1)
        assert api.query("small", 1)[0]["metric"] == {"pod": "p"}


def test_a_gzip_bomb_is_cut_after_decompression_and_a_small_gzip_answer_is_read() -> None:
    import gzip

    small = gzip.compress(json.dumps(vector(({"pod": "p"}, 1))).encode())

    def answer(request: Request) -> Answer:
        if request.form.get("query") == ["small"]:
            return Answer(body=small, headers={"Content-Encoding": "gzip"})
        return Answer(stream=gzip_bomb, headers={"Content-Encoding": "gzip"})

    with serve(answer) as fake, PrometheusAPI(Connection(fake.url, max_bytes=MIB, timeout_s=5)) as api:
        with pytest.raises(QueryFailed, match=r"^query: the answer is larger than 1MiB \(decompressed\)"):
            api.query("bomb", 1)
        assert api.query("small", 1)[0]["metric"] == {"pod": "p"}
    sent = fake.seen[0].headers["accept-encoding"]
    assert sent == "gzip, deflate", "only encodings the client decompresses itself are asked for"


def test_a_content_length_over_the_cap_is_refused_before_reading() -> None:
    lie = Answer(body=b'{"status":"success"}', headers={"Content-Length": str(10**12)})
    with serve(lambda r: lie) as fake, PrometheusAPI(Connection(fake.url, max_bytes=MIB)) as api:
        with pytest.raises(QueryFailed, match=r"larger than 1MiB \(Content-Length 1000000000000\)"):
            api.query("up", 1)


_RSS = """
import resource, sys
from obspack.doctor.api import Connection, PrometheusAPI, QueryFailed
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with PrometheusAPI(Connection(sys.argv[1], max_bytes=1024 * 1024, timeout_s=20)) as api:
    try:
        api.query("up", 1)
    except QueryFailed as e:
        print(e)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


@pytest.mark.parametrize(
    ("answer", "side"),
    [
        (Answer(stream=endless_vector), "on the wire"),
        (Answer(stream=gzip_bomb, headers={"Content-Encoding": "gzip"}), "decompressed"),
    ],
    ids=["endless", "gzip-bomb"],
)
def test_memory_stays_bounded_against_endless_answers_and_gzip_bombs(answer: Answer, side: str) -> None:
    """The server would send 512 MiB (endless) or 256 MiB once decompressed (bomb); the client's peak memory
    grows by far less than that (max RSS of its own process, measured after its imports)."""
    with serve(lambda r: answer) as fake:
        run = subprocess.run(
            [sys.executable, "-c", _RSS, fake.url], capture_output=True, text=True, timeout=60
        )
    error, grown_kib = run.stdout.strip().splitlines()
    assert error == f"query: the answer is larger than 1MiB ({side}); raise --max-bytes if it should be"
    assert int(grown_kib) < 64 * 1024, f"grew by {int(grown_kib) // 1024} MiB"


# ---------------------------------------------------------------------------------------------------
# time


TRICKLING = {
    "body": Answer(stream=lambda: iter([b'{"status":"success",'] + [b" "] * 400), pace_s=0.02),
    "headers": Answer(
        raw=lambda: (bytes([c]) for c in b"HTTP/1.0 200 OK\r\nX-Slow: " + b"a" * 400), pace_s=0.02
    ),
}


@pytest.mark.parametrize("part", TRICKLING)
def test_a_trickling_answer_ends_at_the_request_deadline(part: str) -> None:
    """A byte every 20 ms never trips a per-read timeout; the deadline covers the whole request."""

    def answer(request: Request) -> Answer:
        return Answer(body=vector()) if request.form.get("query") == ["quick"] else TRICKLING[part]

    with serve(answer) as fake, PrometheusAPI(Connection(fake.url, timeout_s=0.5)) as api:
        started = time.monotonic()
        with pytest.raises(QueryFailed, match=r"^query: no whole answer within 500ms \(--timeout\)"):
            api.query("slow", 1)
        assert time.monotonic() - started < 3  # 8 s of trickle
        assert api.query("quick", 1) == []


def test_the_run_stops_asking_at_max_time_and_says_what_was_not_asked() -> None:
    """About 250 requests of 0.1 s each, two at a time, take 12 s; the run ends after 2 s, with what it
    had not asked counted as not checked (exit 1: some checks ran; 2 s, not 1, so that some do on a loaded
    machine too)."""
    with serve(lambda r: replace(empty_prometheus(r), delay_s=0.1)) as fake:
        started = time.monotonic()
        result = doctor(fake.url, "--max-time", "2s", "--concurrency", "2")
        took = time.monotonic() - started
    assert result.exit_code == 1, result.output
    assert "not asked: the run's --max-time of 2s is spent" in result.output
    assert " 0 not checked" not in verdict(result.output)
    assert took < 8


# ---------------------------------------------------------------------------------------------------
# shapes


WRONG = {
    "query result is a string": (
        "query",
        success({"resultType": "vector", "result": "x"}),
        "query: not an answer of this endpoint's shape: data: input should be a valid list",
    ),
    "data is a string": (
        "query",
        success("x"),
        "query: not an answer of this endpoint's shape: data: input should be",
    ),
    "no data": (
        "query",
        Answer(body={"status": "success"}),
        "query: not an answer of this endpoint's shape: data:",
    ),
    "a label value is a number": (
        "query",
        success({"resultType": "vector", "result": [{"metric": {"job": 5}, "value": [1, "1"]}]}),
        "data[0].metric.job: input should be a valid string",
    ),
    "a sample value is not a number": (
        "query",
        success({"resultType": "vector", "result": [{"metric": {}, "value": [1, "many"]}]}),
        "data[0].value[1]: value error",
    ),
    "a timestamp is not a number": (
        "query_range",
        success({"resultType": "matrix", "result": [{"metric": {}, "values": [["abc", "1"]]}]}),
        "query_range: not an answer of this endpoint's shape: data[0].values[0][0]",
    ),
    "a string result": (
        "query",
        success({"resultType": "string", "result": [1, "x"]}),
        "query: a string result",
    ),
    "label values hold null": ("label_values", success(["a", None]), "label/job/values: not an answer of"),
    "label names are numbers": (
        "label_names",
        success([1, 2]),
        "labels: not an answer of this endpoint's shape",
    ),
    "nested 200,000 deep": (
        "query",
        Answer(body=b"[" * 200_000 + b"]" * 200_000),
        "query: nested too deeply to be a Prometheus API answer",
    ),
    "status is neither success nor error": (
        "query",
        Answer(body={"status": "maybe"}),
        "query: not a Prometheus API answer: answer.status: input should be 'success' or 'error'",
    ),
}


def _call(api: PrometheusAPI, endpoint: str) -> object:
    return {
        "query": lambda: api.query("up", 1),
        "query_range": lambda: api.query_range("up", 0, 60, 15),
        "label_values": lambda: api.label_values("job", "up", 0, 60),
        "label_names": lambda: api.label_names(["up"], 0, 60),
    }[endpoint]()


@pytest.mark.parametrize("case", WRONG)
def test_a_wrong_shape_is_one_line_naming_the_endpoint(case: str) -> None:
    endpoint, answer, message = WRONG[case]
    with serve(lambda r: answer) as fake, PrometheusAPI(Connection(fake.url)) as api:
        with pytest.raises(QueryFailed) as failed:
            _call(api, endpoint)
    assert message in str(failed.value) and "\n" not in str(failed.value)


@pytest.mark.parametrize(
    ("endpoint", "answer", "expected"),
    [
        (
            "query",
            success({"resultType": "vector", "result": [{"metric": {"a": "b"}, "value": [1, "NaN"]}]}),
            "NaN",
        ),
        ("query", success({"resultType": "scalar", "result": [1, "+Inf"]}), "+Inf"),
        (
            "query_range",
            success({"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "2"]]}]}),
            None,
        ),
        ("label_values", Answer(body={"status": "success", "data": None}), None),
    ],
)
def test_the_right_shapes_pass_with_nan_and_inf_values(
    endpoint: str, answer: Answer, expected: str | None
) -> None:
    with serve(lambda r: answer) as fake, PrometheusAPI(Connection(fake.url)) as api:
        result = _call(api, endpoint)
    if endpoint == "query":
        assert result[0]["value"][1] == expected  # type: ignore[index]
    else:
        assert isinstance(result, list)


def test_wrong_shapes_of_rules_and_targets_leave_their_checks_not_asked() -> None:
    def answer(request: Request) -> Answer:
        if request.path == "/api/v1/rules":
            return success({"groups": [1, 2]})
        if request.path == "/api/v1/targets":
            return success({"activeTargets": "x"})
        if request.path == "/api/v1/status/buildinfo":
            return success({"version": 5})
        return empty_prometheus(request)

    with serve(answer) as fake, PrometheusAPI(Connection(fake.url)) as api:
        backend = detect(api)
    assert not backend.rules.available and backend.rules.unasked
    assert (
        "rules could not be asked (rules: not an answer of this endpoint's shape: data.groups[0]"
        in backend.rules.detail
    )
    assert backend.targets.unasked and "data.activeTargets" in backend.targets.detail
    assert backend.version == ""  # a buildinfo of the wrong shape is not read
    with serve(empty_prometheus) as fake, PrometheusAPI(Connection(fake.url)) as api:
        good = detect(api)
    assert good.rules.available and good.targets.available and good.version == "2.53.0"


def test_invalid_utf8_and_infinite_counts_do_not_stop_the_run() -> None:
    def answer(request: Request) -> Answer:
        if request.path == "/api/v1/query" and not first_query(request):
            body = b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"\xff"},"value":[1,"+Inf"]}]}}'
            return Answer(body=body)
        return empty_prometheus(request)

    with serve(answer) as fake:
        result = doctor(fake.url)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert ", 0 not checked," in verdict(result.output)


# ---------------------------------------------------------------------------------------------------
# checks not asked, retries


def test_a_check_not_asked_is_never_a_pass_and_is_counted() -> None:
    """dcgm-exporter's questions get a 503 asking to retry in an hour: not waited for, not a pass."""

    def answer(request: Request) -> Answer:
        if "DCGM" in (request.form.get("query") or [""])[0]:
            return Answer(503, "busy\n", "text/plain", headers={"Retry-After": "3600"})
        return empty_prometheus(request)

    with serve(answer) as fake:
        started = time.monotonic()
        result = doctor(fake.url)
        took = time.monotonic() - started
    with serve(empty_prometheus) as fake:
        healthy = doctor(fake.url)
    assert result.exit_code == 1, result.output
    line = verdict(result.output)
    assert " 0 not checked" not in line and "not checked" in line
    assert "not checked source dcgm-exporter: whether it is here could not be asked" in result.output
    assert "(not asked again: asked to retry after 1h)" in result.output
    assert took < 10
    assert "0 not checked" in verdict(healthy.output)  # the same server answering everything


@pytest.mark.parametrize(
    ("hostile", "fragment"),
    [
        (
            Answer(503, {"status": "error", "errorType": "unavailable", "error": "overloaded"}),
            "stopped answering",
        ),
        (
            Answer(429, "too many outstanding requests\n", "text/plain", headers={"Retry-After": "0"}),
            "stopped answering",
        ),
        (
            Answer(422, {"status": "error", "errorType": "execution", "error": "boom"}),
            "then none of the next",
        ),
        (
            Answer(stream=lambda: iter([b'{"status":"succ']), headers={"Content-Length": "1000"}),
            "the connection broke off",
        ),
    ],
    ids=["503", "429", "every-query-rejected", "closes-mid-body"],
)
def test_a_server_that_stops_answering_after_the_first_query_is_exit_2(
    hostile: Answer, fragment: str
) -> None:
    with serve(after_first(lambda r: hostile)) as fake:
        result = doctor(fake.url, "--timeout", "1s")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and len(result.output.strip().splitlines()) == 1
    assert fragment in result.output


def test_retry_after_is_honoured_within_the_bounds() -> None:
    tries: dict[str, int] = {}

    def answer(request: Request) -> Answer:
        query = request.form["query"][0]
        tries[query] = tries.get(query, 0) + 1
        if query == "twice" and tries[query] <= 2:
            return Answer(429, "slow down", "text/plain", headers={"Retry-After": "0"})
        if query == "always":
            return Answer(503, "busy", "text/plain", headers={"Retry-After": "0"})
        if query == "in an hour":
            return Answer(429, "slow down", "text/plain", headers={"Retry-After": "3600"})
        return Answer(body=vector(({}, 1)))

    with serve(answer) as fake, PrometheusAPI(Connection(fake.url, timeout_s=1, retries=2)) as api:
        assert api.query("twice", 1)[0]["value"][1] == "1"
        with pytest.raises(QueryFailed, match=r"HTTP 503 busy \(asked 3 times: asked to retry after 0s\)"):
            api.query("always", 1)
        started = time.monotonic()
        with pytest.raises(QueryFailed, match=r"not asked again: asked to retry after 1h"):
            api.query("in an hour", 1)
        assert time.monotonic() - started < 0.5
    assert tries == {"twice": 3, "always": 3, "in an hour": 1}


def test_a_connection_broken_off_once_is_asked_again() -> None:
    cut = []

    def answer(request: Request) -> Answer:
        if not cut:
            cut.append(request)
            return Answer(stream=lambda: iter([b'{"status":"succ']), headers={"Content-Length": "1000"})
        return Answer(body=vector(({}, 1)))

    with serve(answer) as fake, PrometheusAPI(Connection(fake.url)) as api:
        assert api.query("up", 1)[0]["value"][1] == "1"
        assert api.requests == 2


# ---------------------------------------------------------------------------------------------------
# secrets and what is printed


def test_credentials_in_the_url_are_sent_and_never_printed() -> None:
    with serve(empty_prometheus) as fake:
        url = fake.url.replace("http://", "http://admin:s3cret@")
        text = doctor(url)
        as_json = doctor(url, "--json")
    assert fake.seen[0].headers["authorization"].startswith("Basic ")
    for result in (text, as_json):
        assert "s3cret" not in result.output and "admin:***@127.0.0.1" in result.output
    assert json.loads(as_json.output)["url"].startswith("http://admin:***@")
    unreachable = doctor(f"http://admin:s3cret@127.0.0.1:{free_port()}")
    assert unreachable.exit_code == 2 and "s3cret" not in unreachable.output
    assert "cannot connect to http://admin:***@127.0.0.1:" in unreachable.output


def test_credentials_a_server_echoes_back_are_masked() -> None:
    echo = lambda r: Answer(500, f"bad request from {r.headers.get('authorization')}", "text/plain")  # noqa: E731
    with serve(echo) as fake:
        bearer = doctor(fake.url, "--bearer-token", "t0psecret-token")
        basic = doctor(fake.url.replace("http://", "http://admin:s3cret@"))
    assert bearer.exit_code == 2 and "bad request from Bearer ***" in bearer.output
    assert "t0psecret" not in bearer.output
    assert "s3cret" not in basic.output and "YWRtaW46czNjcmV0" not in basic.output  # base64 of admin:s3cret


def test_credentials_in_the_url_and_basic_auth_together_are_refused() -> None:
    with serve(empty_prometheus) as fake:
        result = doctor(fake.url.replace("http://", "http://admin:s3cret@"), "--basic-auth", "ops:other")
        assert not fake.seen
    assert result.exit_code == 2 and "not both" in result.output and "s3cret" not in result.output


def test_a_redirect_is_not_followed_and_the_other_host_gets_nothing() -> None:
    with serve(empty_prometheus) as other:
        elsewhere = other.url.replace("127.0.0.1", "localhost")
        with serve(lambda r: Answer(302, b"", headers={"Location": elsewhere + r.path})) as fake:
            result = doctor(fake.url, "--header", "X-Api-Key: k3y-secret-value")
        assert not other.seen
    assert result.exit_code == 2
    assert "answered query with a redirect (302) to http://localhost:" in result.output
    assert "give the final URL as --prometheus" in result.output


def test_escape_sequences_and_huge_texts_from_the_server_are_not_printed_as_they_are() -> None:
    """An error message (in a not-checked line) and a scrape target's last error (in a note)."""
    down = {"labels": {"job": "vllm"}, "health": "down", "lastError": "\x1b]0;owned\x07refused"}

    def answer(request: Request) -> Answer:
        query = (request.form.get("query") or [""])[0]
        if "DCGM" in query:
            error = "\x1b[2J\x1b[31mall good\x1b[0m" + "x" * 500_000
            return Answer(422, {"status": "error", "errorType": "execution", "error": error})
        if query.startswith("count by (job) (vllm:num_requests_running"):
            return Answer(body=vector(({"job": "vllm"}, 1)))
        if request.path == "/api/v1/targets":
            return success({"activeTargets": [down]})
        return empty_prometheus(request)

    with serve(answer) as fake:
        result = doctor(fake.url)
    assert "\x1b" not in result.output
    assert "\\x1b[2J" in result.output and "last error: \\x1b]0;owned\\x07refused" in result.output
    assert len(result.output) < 100_000


def test_https_to_a_plain_http_server_is_a_clear_error() -> None:
    with serve(empty_prometheus) as fake:
        result = doctor(fake.url.replace("http://", "https://"))
    assert result.exit_code == 2 and result.output.startswith("error: cannot connect to https://127.0.0.1:")
    assert "WRONG_VERSION_NUMBER" in result.output or "SSL" in result.output
