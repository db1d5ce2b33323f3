"""The doctor's HTTP client and command against servers that misbehave: each gives a clear error and exit
code 2, never a traceback; and what the client sends (path prefix, auth, headers, POSTed queries, TLS)."""

from __future__ import annotations

import base64
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from obspack.cli import app
from obspack.demo.processes import free_port
from obspack.doctor.api import Connection, DoctorError, PrometheusAPI, QueryFailed
from obspack.doctor.settings import connection as server
from tests.doctor.fakes import Answer, Request, serve, vector
from tests.support.tools import require_tool

runner = CliRunner()


def doctor(url: str, *args: str):
    return runner.invoke(app, ["doctor", "--prometheus", url, *args])


def assert_clear_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert lines and all(line.startswith("error: ") for line in lines), result.output
    for fragment in fragments:
        assert fragment in result.output, result.output


def test_an_unreachable_server() -> None:
    assert_clear_error(doctor(f"http://127.0.0.1:{free_port()}"), "cannot connect to http://127.0.0.1:")


def test_a_server_that_wants_credentials() -> None:
    with serve(lambda r: Answer(401, "unauthorized\n", "text/plain")) as fake:
        assert_clear_error(doctor(fake.url), "refused the request (401 Unauthorized)", "--bearer-token")


def test_a_server_that_answers_garbage() -> None:
    with serve(lambda r: Answer(200, "<html><body>Grafana</body></html>", "text/html")) as fake:
        assert_clear_error(
            doctor(fake.url), "does not answer like the Prometheus API", "<html>", "path prefix"
        )


def test_a_server_that_answers_an_error_to_a_plain_query() -> None:
    error = {"status": "error", "errorType": "internal", "error": "storage is broken"}
    with serve(lambda r: Answer(500, error)) as fake:
        assert_clear_error(doctor(fake.url), "did not answer a query", "internal: storage is broken")


def test_a_slow_server_times_out_within_the_limit() -> None:
    with serve(lambda r: Answer(body=vector(), delay_s=5)) as fake:
        started = time.monotonic()
        result = doctor(fake.url, "--timeout", "1")
        assert time.monotonic() - started < 4
    assert_clear_error(result, "no whole answer within 1s")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--header", "no colon"], "write it as 'Name: value'"),
        (["--time", "yesterday"], "--time 'yesterday'"),
        (["--lookback", "a while"], "--lookback 'a while'"),
        (["--backend", "influx"], "--backend 'influx'"),
        (["--basic-auth", "nopassword"], "--basic-auth"),
        (["--bearer-token", "a", "--bearer-token-file", "/nonexistent"], "not both"),
        (["--ca-file", "/nonexistent.pem"], "--ca-file /nonexistent.pem: no such file"),
    ],
)
def test_bad_options_are_refused_before_asking(args: list[str], fragment: str) -> None:
    with serve(lambda r: Answer(body=vector())) as fake:
        result = doctor(fake.url, *args)
        assert not fake.seen, "nothing is asked with bad options"
    assert_clear_error(result, fragment)


def test_a_url_that_is_not_http() -> None:
    assert_clear_error(doctor("prometheus:9090"), "must be an http:// or https:// URL")


def test_requests_carry_the_prefix_credentials_and_headers_and_post_their_queries() -> None:
    connection = server(prometheus="", basic_auth="ops:s3cret", header=["X-Team: ml"], tenant="team-a", timeout=5)
    with serve(lambda r: Answer(body=vector(({"job": "x"}, 1)))) as fake:
        url = f"{fake.url}/prometheus"
        with PrometheusAPI(Connection(url, connection.headers, None, connection.basic_auth)) as api:
            (sample,) = api.query('up{job="x"}', 1700000000)
            assert sample["metric"] == {"job": "x"} and sample["value"][1] == "1"
        with PrometheusAPI(Connection(url, bearer_token="t0ken")) as api:
            api.get("labels", {"match[]": ["up", "vllm:num_requests_running"]})
    query, labels = fake.seen
    assert (query.method, query.path) == ("POST", "/prometheus/api/v1/query")
    assert query.form["query"] == ['up{job="x"}'] and query.form["time"] == ["1700000000.000"]
    assert query.headers["authorization"] == "Basic " + base64.b64encode(b"ops:s3cret").decode()
    assert query.headers["x-scope-orgid"] == "team-a" and query.headers["x-team"] == "ml"
    assert (labels.method, labels.path) == ("GET", "/prometheus/api/v1/labels")
    assert labels.query["match[]"] == ["up", "vllm:num_requests_running"]
    assert labels.headers["authorization"] == "Bearer t0ken"


def test_a_failed_query_is_not_fatal_but_refused_credentials_are() -> None:
    def answer(request: Request) -> Answer:
        if request.form.get("query") == ["bad"]:
            return Answer(400, {"status": "error", "errorType": "bad_data", "error": "parse error"})
        return Answer(403, "forbidden", "text/plain")

    with serve(answer) as fake, PrometheusAPI(Connection(fake.url)) as api:
        with pytest.raises(QueryFailed, match="bad_data: parse error"):
            api.query("bad", 1)
        with pytest.raises(DoctorError, match="403"):
            api.query("up", 1)


def test_concurrency_is_bounded() -> None:
    with serve(lambda r: Answer(body=vector(), delay_s=0.1)) as fake:
        with PrometheusAPI(Connection(fake.url, concurrency=3)) as api:
            results = api.map(lambda i: api.query(f"vector({i})", 1), range(12))
        assert len(results) == 12 and fake.most_in_flight == 3


# ---------------------------------------------------------------------------------------------------
# TLS


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    openssl = require_tool("openssl")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[str]:
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    with serve(lambda r: Answer(body=vector()), tls=context) as fake:
        yield fake.url


def test_tls_needs_the_ca_file_or_an_explicit_skip(tls_server: str, certificate: tuple[Path, Path]) -> None:
    with pytest.raises(DoctorError, match="CERTIFICATE_VERIFY_FAILED.*--ca-file"):
        with PrometheusAPI(Connection(tls_server)) as api:
            api.query("vector(1)", 1)
    for connection in (Connection(tls_server, ca_file=certificate[0]), Connection(tls_server, insecure=True)):
        with PrometheusAPI(connection) as api:
            assert api.query("vector(1)", 1) == []


def test_threads_share_one_client() -> None:
    """The client is used from the worker threads of map(); one connection pool serves them all."""
    with serve(lambda r: Answer(body=vector())) as fake, PrometheusAPI(Connection(fake.url)) as api:
        names = set()
        api.map(lambda i: names.add(threading.current_thread().name) or api.query("up", i), range(8))
        assert len(names) > 1 and api.requests == 8


def test_alerts_lists_pending_and_firing_and_refuses_a_wrong_shape() -> None:
    """/api/v1/alerts, which the demo's watcher polls: the list as Prometheus gives it; an alert without
    labels is a wrong shape, one line naming the place, and the next request still works."""
    firing = {"labels": {"alertname": "VLLMTargetDown"}, "state": "firing", "annotations": {"summary": "s"},
              "activeAt": "2026-01-01T00:00:00Z", "value": "1e+00"}  # fmt: skip
    answers = iter([{"alerts": [firing]}, {"alerts": [{"state": "pending"}]}, {"alerts": []}])

    def answer(request: Request) -> Answer:
        assert (request.method, request.path) == ("GET", "/api/v1/alerts")
        return Answer(body={"status": "success", "data": next(answers)})

    with serve(answer) as fake, PrometheusAPI(Connection(fake.url)) as api:
        assert api.alerts() == [firing]
        with pytest.raises(QueryFailed, match=r"^alerts: not an answer of this endpoint's shape: data.alerts\[0\].labels"):
            api.alerts()
        assert api.alerts() == []
