"""One latency burn, live: a fake vLLM's time to first token jumps from 0.15 s to 8 s, a real Prometheus
evaluates the rendered SLO rules and VLLMErrorBudgetBurn, and a real Alertmanager pages through the
rendered example routes. The same model in another namespace stays healthy and quiet.

The config sets `slos.speedup: 60`, the documented knob for demos and live tests: every SLO window and
`for` is divided by 60 (the page's 1h/5m pair becomes 1m/5s), so the burn pages within seconds.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from obspack import conventions as c
from obspack.demo import fake_vllm as fv
from obspack.demo.clients import ALERTMANAGER, PROMETHEUS, wait_until
from obspack.demo.stack import (
    CLUSTER,
    EXPORTER_JOB,
    NAMESPACE,
    RUNBOOK_BASE_URL,
    VLLM_JOB,
    PodSpec,
    Stack,
    Tools,
)
from obspack.rules.alerts.slo import ALERT
from tests.e2e.checks import explained

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

BURNING, CALM = "vllm-burn-0", "vllm-calm-0"
CALM_NAMESPACE = "llm-canary"
STEADY = replace(fv.NORMAL, requests_per_s=5.0)  # 300 requests a minute: past the guard of 100
SLO_CONFIG = f"""\
selectors:
  vllm: job="{VLLM_JOB}"
  exporter: job="{EXPORTER_JOB}"
rule_interval: 1s
runbook_base_url: {RUNBOOK_BASE_URL}
slos:
  speedup: 60  # windows 5s/1m, 30s/6m, 2m/24m, 6m/72m; `for` 2s, 15s, 1m, 3m
"""
PAGE = {"long": "1m", "short": "5s"}


def test_fake_vllm_reports_http_errors_by_status() -> None:
    clock = [0.0]
    engine = fv.Engine(replace(STEADY, error_ratio=0.25), clock=lambda: clock[0], history_s=0)
    clock[0] = 100.0
    lines = [
        line for line in engine.exposition().decode().splitlines() if line.startswith("http_requests_total")
    ]
    counts = {line.split('status="')[1][:3]: float(line.rsplit(" ", 1)[1]) for line in lines}
    assert counts == {"2xx": 375.0, "5xx": 125.0}


def test_a_latency_burn_pages_through_alertmanager(
    e2e_tools: Tools, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pods = [PodSpec(BURNING, STEADY), PodSpec(CALM, STEADY, namespace=CALM_NAMESPACE)]
    with Stack(tmp_path_factory.mktemp("slo"), pods, e2e_tools, interval_s=1, config=SLO_CONFIG) as stack:
        assert stack.watcher is not None and stack.prometheus is not None and stack.webhook is not None
        watcher, prometheus, webhook = stack.watcher, stack.prometheus, stack.webhook
        with explained(stack):
            stack.wait_for_data()
            wait_until(
                lambda: prometheus.query(f'{c.slo_rate("events", "1m")}{{slo="time_to_first_token"}} > 0'),
                20,
                "SLO records of both namespaces",
            )
            assert not watcher.tracks(PROMETHEUS, ALERT), "nothing burns before the incident"

            stack.set_load(BURNING, replace(STEADY, ttft_s=8.0))  # ~97% of first tokens after 2.5 s
            wait_until(
                lambda: watcher.state(PROMETHEUS, ALERT, namespace=NAMESPACE, **PAGE) == "firing",
                45,
                "the 1m/5s page to fire",
            )

            track = wait_until(
                lambda: watcher.track(ALERTMANAGER, ALERT, namespace=NAMESPACE, **PAGE), 15, "Alertmanager"
            )
            want = {
                "alertname": ALERT,
                "cluster": CLUSTER,
                "namespace": NAMESPACE,
                "model_name": fv.DEFAULT_MODEL,
                "slo": "time_to_first_token",
                "severity": "critical",
                **PAGE,
            }
            assert {k: track.labels.get(k) for k in want} == want
            assert "pod" not in track.labels
            annotations = track.last["annotations"]
            assert annotations["runbook_url"] == f"{RUNBOOK_BASE_URL}/vllm-error-budget-burn.md"
            assert (
                f"{NAMESPACE}/{fv.DEFAULT_MODEL}: the time_to_first_token SLO" in annotations["description"]
            )
            assert [r["name"] for r in track.last["receivers"]] == ["obspack-pager"]

            def paged() -> bool:
                return any(
                    receiver == "obspack-pager" and status == "firing" and labels.items() >= want.items()
                    for receiver, status, labels in webhook.deliveries()
                )

            wait_until(paged, 15, "the pager's notification")
            # The other namespace serves the same model at normal latency: its SLO is there and quiet.
            calm = prometheus.query(
                f'{c.slo_rate("errors", "1m")}{{namespace="{CALM_NAMESPACE}", slo="time_to_first_token"}}'
                f' / {c.slo_rate("events", "1m")}{{namespace="{CALM_NAMESPACE}", slo="time_to_first_token"}}'
            )
            assert calm and float(calm[0]["value"][1]) < 0.01, calm
            assert not watcher.tracks(PROMETHEUS, ALERT, namespace=CALM_NAMESPACE)
