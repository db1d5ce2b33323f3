"""Which backend answers is told from its answers, and each capability is probed (real Prometheus, Mimir
and VictoriaMetrics are covered by the fleet tests; here, Thanos Query and the others by their API shape)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from obspack.doctor.api import Connection, PrometheusAPI
from obspack.doctor.backends import detect
from tests.doctor.fakes import Answer, Request, serve, vector

NOT_FOUND = Answer(404, "404 page not found\n", "text/plain")


def api_like(**paths: dict | Answer) -> Callable[[Request], Answer]:
    def handle(request: Request) -> Answer:
        key = "vmalert" if request.path.startswith("/vmalert/") else request.path.removeprefix("/api/v1/")
        found = paths.get(key.replace("/", "_"))
        if found is None:
            return Answer(body=vector()) if request.path == "/api/v1/query" else NOT_FOUND
        return found if isinstance(found, Answer) else Answer(body={"status": "success", "data": found})

    return handle


THANOS = api_like(
    status_buildinfo={"version": "0.36.1"},
    stores={"sidecar": []},
    rules={"groups": []},
    targets={"activeTargets": [], "droppedTargets": []},
)
PROMETHEUS = api_like(
    status_buildinfo={"version": "2.53.0"},
    status_tsdb={"headStats": {"numSeries": 12}},
    rules={"groups": []},
    targets={"activeTargets": []},
)
VICTORIAMETRICS = api_like(
    status_buildinfo={},
    status_tsdb={"totalSeries": 7},
    rules={"groups": []},  # a stub: VictoriaMetrics has no rules of its own
    targets={"activeTargets": []},
    vmalert=Answer(400, "for accessing vmalert flag '-vmalert.proxyURL' must be configured", "text/plain"),
)


@pytest.mark.parametrize(
    ("server", "kind", "capabilities"),
    [
        (THANOS, "thanos", {"rules": True, "targets": True, "tsdb": False}),
        (PROMETHEUS, "prometheus", {"rules": True, "targets": True, "tsdb": True}),
        (VICTORIAMETRICS, "victoriametrics", {"rules": False, "targets": False, "tsdb": True}),
    ],
)
def test_the_backend_and_what_it_allows(server, kind: str, capabilities: dict[str, bool]) -> None:
    with serve(server) as fake, PrometheusAPI(Connection(fake.url)) as api:
        backend = detect(api)
    assert backend.kind == kind
    assert {
        "rules": backend.rules.available,
        "targets": backend.targets.available,
        "tsdb": backend.tsdb.available,
    } == capabilities
    for capability in (backend.rules, backend.targets, backend.tsdb):
        assert capability.available or capability.detail, "an unavailable check says why"


def test_the_kind_can_be_given() -> None:
    with serve(PROMETHEUS) as fake, PrometheusAPI(Connection(fake.url)) as api:
        assert detect(api, "mimir").kind == "mimir"


def test_targets_of_the_sources_jobs_that_are_down_are_noted() -> None:
    from obspack.doctor.backends import Backend, Capability
    from obspack.doctor.targets import scrape_targets

    def target(job: str, health: str, error: str = "") -> dict:
        return {"labels": {"job": job}, "health": health, "lastError": error}

    backend = Backend(
        "prometheus",
        "2.53.0",
        Capability(True),
        Capability(True),
        Capability(True),
        active_targets=(
            target("vllm", "up"),
            target("vllm", "down", 'Get "http://10.0.0.7:8000/metrics": connection refused'),
            target("node-exporter", "down", "timeout"),  # not a job of the pack's sources
        ),
    )
    summary, findings = scrape_targets(backend, {"vllm": ["vllm"], "dcgm": ["nvidia-dcgm-exporter"]})
    assert summary == "2 targets in 1 jobs of the sources, 1 down"
    assert [(f.subject, f.message) for f in findings] == [
        (
            "job vllm",
            '1 of 2 targets down; last error: Get "http://10.0.0.7:8000/metrics": connection refused',
        )
    ]
    unlisted = Backend(
        "mimir", "", Capability(True), Capability(False, "targets not served"), Capability(False)
    )
    assert scrape_targets(unlisted, {"vllm": ["vllm"]}) == ("not checked: targets not served", [])


def test_leaderworkerset_workers_are_no_vllm_targets_down() -> None:
    from obspack.doctor.backends import Backend, Capability
    from obspack.doctor.targets import scrape_targets

    def target(pod: str, health: str, namespace: str = "llm") -> dict:
        return {"labels": {"job": "vllm", "namespace": namespace, "pod": pod}, "health": health,
                "lastError": "" if health == "up" else "connection refused"}

    active = (
        target("llama-0", "up"),  # an LWS leader: serves vLLM's metrics
        target("llama-0-1", "down"),  # its workers: no /metrics
        target("llama-0-2", "down"),
        target("qwen-1", "down"),  # a StatefulSet's pod: no pod "qwen" -> a vLLM target down
        target("mistral-0-1", "down", namespace="other"),  # "mistral-0" runs in another namespace only
        target("mistral-0", "up", namespace="llm"),
    )
    backend = Backend("prometheus", "2.53.0", Capability(True), Capability(True), Capability(True),
                      active_targets=active)
    summary, findings = scrape_targets(backend, {"vllm": ["vllm"]})
    assert summary == (
        "4 targets in 1 jobs of the sources, 2 down (2 LeaderWorkerSet workers left out: only their leaders "
        "serve vLLM metrics)"
    )
    assert [(f.subject, f.message) for f in findings] == [
        ("job vllm", "2 of 4 targets down; last error: connection refused")
    ]
