"""The Prometheus client of the demo, the tests and the benchmarks: the doctor's (checked shapes, bounded
answers) with the calls a server's owner makes; a failed call is a clear error, not a KeyError."""

from __future__ import annotations

import time

import pytest

from obspack.demo.processes import StackError
from obspack.demo.prometheus import Prometheus
from obspack.doctor.api import QueryFailed
from tests.doctor.fakes import Answer, Request, serve, vector

GROUP = {"name": "obspack-vllm", "file": "alerts.yaml", "rules": [
    {"name": "VLLMTargetDown", "query": "up == 0", "type": "alerting", "health": "ok"},
    {"name": "r:x", "query": "x", "type": "recording", "health": "unknown"},
]}  # fmt: skip


def test_queries_now_and_lists_rules_with_their_group() -> None:
    def answer(request: Request) -> Answer:
        if request.path == "/api/v1/rules":
            return Answer(body={"status": "success", "data": {"groups": [GROUP]}})
        return Answer(body=vector(({"pod": "p"}, 1)))

    with serve(answer) as fake, Prometheus(fake.url) as prom:
        before = time.time()
        assert prom.query("up")[0]["metric"] == {"pod": "p"}
        assert before - 1 <= float(fake.seen[0].form["time"][0]) <= time.time() + 1
        assert [(r["group"], r["name"], r["health"]) for r in prom.rules()] == [
            ("obspack-vllm", "VLLMTargetDown", "ok"),
            ("obspack-vllm", "r:x", "unknown"),
        ]
        with pytest.raises(StackError, match="rules not evaluated after 0.3s"):
            prom.wait_for_rule_evaluations(timeout=0.3)


def test_a_wrong_shape_and_a_failed_reload_are_clear_errors() -> None:
    def answer(request: Request) -> Answer:
        if request.path == "/-/reload":
            return Answer(500, "error loading rules: bad.yaml", "text/plain")
        return Answer(body={"status": "success", "data": {"groups": [{"name": "g"}]}})

    with serve(answer) as fake, Prometheus(fake.url) as prom:
        with pytest.raises(QueryFailed, match=r"rules: not an answer of this endpoint's shape: data.groups\[0\].rules"):
            prom.rules()
        with pytest.raises(StackError, match="reload answered 500: error loading rules: bad.yaml"):
            prom.reload()
