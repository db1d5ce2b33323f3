"""Bars that count events per step ("Container restarts", the CUDA allocator's retries and OOMs on the triage
page), on a real promtool: one event is one bar of 1, at the step it happened in, and a counter reset draws
no negative bar. The scrape is every 30 s and the graph's step ($__interval) a minute, as Grafana picks it.

With `increase()` over `$__rate_interval` (longer than a step), the same restart showed in two to four
neighbouring bars as fractions: a reader adding them up counted several restarts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from tests.dashboards.lint import panel_queries
from tests.support.tools import promtool_query_test

POD = 'cluster="c1", namespace="llm", pod="vllm-0"'
VALUES = {"cluster": "c1", "namespace": "llm", "pod": "vllm-0", "model": ".*"} | {"__rate_interval": "2m", "__interval": "1m"}
# Every 30 s for 30 minutes: a restart at 10m and at 20m; the allocator's OOM counter counts one OOM at 12m,
# and its process restarts at 25.5m (the counter starts again from 0).
RESTARTS = "0x19 1x19 2x19"
OOMS = "0x23 1x26 0x10"


def _targets(title: str) -> list[str]:
    triage = dict(all_dashboards(ObspackConfig()))[c.TRIAGE_DASHBOARD]
    return panel_queries(triage, title, VALUES)


def _bars(expr: str, labels: str, nonzero: dict[int, int], minutes: range) -> list[dict[str, Any]]:
    """At every minute of `minutes`: the value in `nonzero`, else 0."""
    return [
        {"expr": expr, "eval_time": f"{m}m", "exp_samples": [{"labels": labels, "value": nonzero.get(m, 0)}]}
        for m in minutes
    ]


def test_each_event_is_one_bar_of_one(tmp_path: Path) -> None:
    (restarts,) = _targets("Container restarts")
    _, retries, ooms = _targets("CUDA allocator: fragmentation, retries, OOMs")
    assert "obspack_cuda_alloc_retries_total" in retries and "obspack_cuda_ooms_total" in ooms
    series = [
        {"series": f'kube_pod_container_status_restarts_total{{{POD}, container="vllm", job="kube-state-metrics"}}',
         "values": RESTARTS},
        {"series": f'obspack_cuda_ooms_total{{{POD}, device="0", pid="7"}}', "values": OOMS},
    ]  # fmt: skip
    cases = _bars(restarts, f'{{{POD}, container="vllm"}}', {10: 1, 20: 1}, range(2, 30))
    cases += _bars(ooms, '{cluster="c1", device="0"}', {12: 1}, range(2, 30))  # nothing below 0 at the reset
    promtool_query_test(tmp_path, series, cases, interval="30s")
