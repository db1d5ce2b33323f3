"""Servers that cannot be asked, answer badly, or have no vLLM at all: one clear answer, the right exit code,
no traceback. The misbehaving ones are real sockets on 127.0.0.1 (tests/doctor/fakes.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from obspack.config import ObspackConfig
from obspack.demo.processes import free_port
from obspack.demo.prometheus import Prometheus
from obspack.demo.rightsize_fleet import END, write_without_vllm
from obspack.doctor.api import Connection
from obspack.rightsize.run import rightsize
from obspack.rightsize.settings import Options
from tests.doctor.fakes import Answer, Request, serve, vector
from tests.rightsize.command import report, run
from tests.support.prometheus import backfill_openmetrics, running_prometheus

CONTAINER = {"cluster": "gpu-east", "namespace": "llm", "pod": "api-5d8f9c7b6d-x2k9p", "container": "vllm"}


def _query(request: Request) -> str:
    return (request.form.get("query") or request.query.get("query") or [""])[0]


def api_like(failing: str = "", slow: str = "", garbage: bool = False):  # noqa: ANN201
    """A Prometheus API that knows one vLLM container and nothing else; queries containing `failing` are
    refused (a timeout), those containing `slow` take a second, and with `garbage` the discovery answer
    holds rows that are not Prometheus rows next to the good one."""

    def handle(request: Request) -> Answer:
        if not request.path.endswith(("/query", "/query_range")):
            return Answer(404, "404 page not found\n", "text/plain")
        expr = _query(request)
        if failing and failing in expr:
            body = {"status": "error", "errorType": "timeout", "error": "query timed out in expression evaluation"}
            return Answer(503, body)
        delay = 1.0 if slow and slow in expr else 0.0
        if request.path.endswith("/query_range"):
            return Answer(body={"status": "success", "data": {"resultType": "matrix", "result": []}}, delay_s=delay)
        if expr.startswith("group by (cluster, namespace, pod, container) (\n"):
            answer = vector((CONTAINER, 1))
            if garbage:
                answer["data"]["result"] += [{"metric": "x", "value": [0, "1"]}, {"metric": {}, "value": [0, "lots"]}]
            return Answer(body=answer, delay_s=delay)
        return Answer(body=vector(), delay_s=delay)

    return handle


def test_an_unreachable_server_is_one_line_and_exit_2() -> None:
    code, out, err = run(f"http://127.0.0.1:{free_port()}")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: cannot connect to http://127.0.0.1:")


def test_refused_credentials_say_which_options_to_pass() -> None:
    with serve(lambda r: Answer(401, "unauthorized\n", "text/plain")) as fake:
        code, _, err = run(fake.url, "--bearer-token", "wrong")
    assert code == 2 and "--bearer-token, --basic-auth or --header" in err and "Traceback" not in err


def test_a_server_that_is_not_a_prometheus_api_is_exit_2() -> None:
    with serve(lambda r: Answer(200, "<html>login</html>", "text/html")) as fake:
        code, _, err = run(fake.url)
    assert code == 2 and "does not answer like the Prometheus API" in err


def test_questions_the_server_refuses_are_listed_and_exit_2_while_the_rest_is_reported() -> None:
    with serve(api_like(failing="quantile_over_time")) as fake:
        code, found = report(fake.url)
    assert code == 2 == found["exit_code"]
    failed = {f["quantity"] for f in found["failed_queries"]}
    assert {"ram_serving_p99", "ram_p99", "day_p99", "kv_p99", "cuda_fragmentation_p99", "fb_median"} == failed
    assert all("timeout" in f["error"] for f in found["failed_queries"])
    assert [w["name"] for w in found["workloads"]] == ["api"]  # the answers that came still count


def test_a_slow_question_times_out_alone() -> None:
    with serve(api_like(slow="quantile_over_time(0.99, (\n((max_over_time(container_memory")) as fake:  # the serving p99 only
        started = time.monotonic()
        found = rightsize(ObspackConfig(), Connection(fake.url, timeout_s=0.6, concurrency=2), Options(at=END))
        took = time.monotonic() - started
    assert [f.quantity for f in found.failures] == ["ram_serving_p99"]
    assert "no whole answer within 600ms" in found.failures[0].error and found.exit_code == 2
    assert took < 10  # generous: the deadline is per request


def test_an_answer_of_the_wrong_shape_is_a_failed_question_not_a_guess() -> None:
    """The client checks every answer's shape: rows that are not Prometheus rows fail their question (exit
    2, named), and the report does not pretend the fleet has no vLLM."""
    with serve(api_like(garbage=True)) as fake:
        code, found = report(fake.url)
    assert code == 2 == found["exit_code"]
    assert [f["quantity"] for f in found["failed_queries"]] == ["containers"]
    assert "not an answer of this endpoint's shape: data[1].metric" in found["failed_queries"][0]["error"]
    assert found["workloads"] == [] and not any("no vLLM workloads found" in n for n in found["notes"])


@pytest.fixture(scope="module")
def without_vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    root = tmp_path_factory.mktemp("rightsize-no-vllm")
    write_without_vllm(root / "fleet.om")
    backfill_openmetrics(root / "fleet.om", root / "data", max_block="4320h")
    with running_prometheus(root / "data") as prom:
        yield prom


@pytest.mark.e2e
@pytest.mark.tool
def test_a_prometheus_without_vllm_says_so_with_the_selectors_it_tried_and_exits_1(without_vllm: Prometheus) -> None:
    """A wrong selector must not pass a CI job: finding nothing is exit code 1, and the report shows what it
    looked for."""
    code, out, _ = run(without_vllm.url)
    assert code == 1
    assert "note: no vLLM workloads found in the window" in out and "0 workloads" in out
    assert 'note: tried: container_memory_working_set_bytes{container!="", container!="POD", image=~".*vllm.*"}' in out
    code, found = report(without_vllm.url)
    assert code == 1 and found["workloads"] == [] and found["patches"] == []
    assert 'vllm:num_requests_running{model_name!="", container!=""}' in found["selectors_tried"]
    assert found["requests"] == 1 + 6 + 3  # discovery only: nothing else is asked
    assert json.loads(json.dumps(found)) == found  # plain JSON, no NaN or Infinity


def test_bad_config_is_exit_2_before_asking(tmp_path: Path) -> None:
    config = tmp_path / "obspack.yaml"
    config.write_text("selectors: {vllm: 'job=='}\n")
    code, _, err = run(f"http://127.0.0.1:{free_port()}", "--config", str(config))
    assert code == 2 and err.startswith("error: ")
