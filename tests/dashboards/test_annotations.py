"""The triage page's event queries on real PromQL: its annotations (OOM kills, other restarts, firing alerts,
rollouts, images) and its two event tables, evaluated by `promtool test rules` over series in which those
events happen, with a team's selectors and cluster label. Series of another kube-state-metrics job, another
pod and another Deployment are there too, and must not show.

A healthy fleet has none of these events (tests/dashboards/test_no_data.py lists the tables as empty by
design there); here each query is shown where an event is and where none is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from tests.dashboards.lint import annotations, fill, panel_queries
from tests.support.tools import promtool_query_test

CFG = ObspackConfig.model_validate(
    {"cluster_label": "k8s_cluster", "selectors": {"kube_state_metrics": 'job="kube-state-metrics"'}}
)
# the one pod, with a 1m step (so a 2m $__rate_interval)
VALUES = {"cluster": "c1", "namespace": "llm", "pod": "vllm-0", "model": ".*"} | {"__rate_interval": "2m", "__interval": "1m"}
TRIAGE = dict(all_dashboards(CFG))[c.TRIAGE_DASHBOARD]
KSM = 'job="kube-state-metrics", k8s_cluster="c1", namespace="llm"'
POD = f'{KSM}, pod="vllm-0"'
ALERT = 'alertname="VLLMHostMemoryNearLimit", k8s_cluster="c1", namespace="llm", pod="vllm-0", container="vllm", severity="warning"'




def _series() -> list[dict[str, str]]:
    """One pod, minute by minute for 90m: OOM-killed at 20m, an Error at 40m, a sidecar restart at 50m
    with no reason reported, an alert firing from 10m to 15m, and a new image at 61m (the same pod name, as
    in a StatefulSet). Its ReplicaSet vllm-7d9 (created at 30m) and an older one belong to Deployment vllm."""
    series = []
    for instance in ("ksm-0", "ksm-1"):  # HA kube-state-metrics: every series twice
        ksm = f'{POD}, instance="{instance}"'
        series += [
            {"series": f'kube_pod_container_status_restarts_total{{{ksm}, container="vllm"}}', "values": "0x19 1x19 2x50"},
            {"series": f'kube_pod_container_status_restarts_total{{{ksm}, container="sidecar"}}', "values": "0x49 1x40"},
            {"series": f'kube_pod_container_status_last_terminated_reason{{{ksm}, container="vllm", reason="OOMKilled"}}', "values": "_x20 1x19 stale"},
            {"series": f'kube_pod_container_status_last_terminated_reason{{{ksm}, container="vllm", reason="Error"}}', "values": "_x40 1x49"},
            {"series": f'kube_pod_container_status_last_terminated_exitcode{{{ksm}, container="vllm"}}', "values": "_x20 137x19 1x50"},
            {"series": f'kube_pod_container_status_last_terminated_timestamp{{{ksm}, container="vllm"}}', "values": "_x20 1200x19 2400x50"},
            {"series": f'kube_pod_owner{{{ksm}, owner_kind="ReplicaSet", owner_name="vllm-7d9"}}', "values": "1x90"},
            {"series": f'kube_pod_container_info{{{ksm}, container="vllm", image="vllm:0.9", container_id="a"}}', "values": "1x60 stale"},
            {"series": f'kube_pod_container_info{{{ksm}, container="vllm", image="vllm:0.10", container_id="b"}}', "values": "_x61 1x28"},
        ]
        for rs, deployment, created in (("vllm-7d9", "vllm", 1800), ("vllm-5c1", "vllm", 60), ("other-1", "other", 120)):
            rs_labels = f'{KSM}, instance="{instance}", replicaset="{rs}"'
            series += [
                {"series": f'kube_replicaset_owner{{{rs_labels}, owner_kind="Deployment", owner_name="{deployment}"}}', "values": "1x90"},
                {"series": f"kube_replicaset_created{{{rs_labels}}}", "values": f"{created}x90"},
            ]
    series += [
        # another job's copy (not kube-state-metrics): its restart at 30m must not show
        {"series": 'kube_pod_container_status_restarts_total{job="other", k8s_cluster="c1", namespace="llm", pod="vllm-0", container="vllm"}', "values": "0x29 5x60"},
        # another pod of the namespace restarts at 30m: not this pod's event
        {"series": f'kube_pod_container_status_restarts_total{{{KSM}, pod="vllm-1", container="vllm"}}', "values": "0x29 1x60"},
        {"series": f'ALERTS{{{ALERT}, alertstate="firing"}}', "values": "_x10 1x5 stale"},
        {"series": f"ALERTS_FOR_STATE{{{ALERT}}}", "values": "_x10 600x5 stale"},
        {"series": 'ALERTS{alertname="VLLMKVCacheUsageHigh", alertstate="firing", k8s_cluster="c1", namespace="llm", pod="vllm-1", model_name="m", severity="warning"}', "values": "1x90"},
    ]  # fmt: skip
    return series


def _test(expr: str, at: str, samples: list[tuple[str, float]]) -> dict[str, Any]:
    return {"expr": expr, "eval_time": at, "exp_samples": [{"labels": lab, "value": v} for lab, v in samples]}


def _marks() -> dict[str, str]:
    return {a["name"]: fill(a["expr"], VALUES) for a in annotations(TRIAGE)}


def _table(title: str) -> list[str]:
    return panel_queries(TRIAGE, title, VALUES)


def test_triage_event_queries_find_the_pods_events_and_nothing_else(tmp_path: Path) -> None:
    m = _marks()
    vllm = '{k8s_cluster="c1", namespace="llm", pod="vllm-0", container="vllm"}'
    sidecar = '{k8s_cluster="c1", namespace="llm", pod="vllm-0", container="sidecar"}'
    alert = "{" + ALERT + "}"
    event = "sgn({})"  # an annotation draws where the value is above zero: 1 for each event
    cases = [
        _test(event.format(m["OOM kills"]), "20m", [(vllm, 1)]),
        _test(event.format(m["Restarts"]), "20m", []),  # the OOM kill is marked once, as an OOM kill
        _test(event.format(m["OOM kills"]), "30m", []),  # nothing at 30m: another job, another pod
        _test(event.format(m["Restarts"]), "30m", []),
        _test(event.format(m["Restarts"]), "40m", [(vllm[:-1] + ', reason="Error"}', 1)]),
        _test(event.format(m["OOM kills"]), "40m", []),
        _test(event.format(m["Restarts"]), "50m", [(sidecar, 1)]),  # no reason reported: still marked
        _test(m["Firing alerts"], "12m", [(alert, 1)]),
        _test(m["Firing alerts"], "20m", []),
        _test(
            m["Rollouts"],
            "80m",
            [
                ('{k8s_cluster="c1", namespace="llm", replicaset="vllm-7d9", owner_name="vllm"}', 1_800_000),
                ('{k8s_cluster="c1", namespace="llm", replicaset="vllm-5c1", owner_name="vllm"}', 60_000),
            ],
        ),
        _test(m["Images on this pod"], "61m", [(vllm[:-1] + ', image="vllm:0.10"}', 1)]),
        _test(m["Images on this pod"], "70m", []),
    ]
    reason, exit_code, at = _table("Last termination: reason, exit code, time")
    cases += [
        _test(reason, "45m", [(vllm[:-1] + ', reason="Error"}', 1)]),
        _test(exit_code, "25m", [(vllm, 137)]),
        _test(exit_code, "45m", [(vllm, 1)]),
        _test(at, "45m", [(vllm, 2_400_000)]),
    ]
    firing, since = _table("Firing obspack alerts on this pod")
    cases += [_test(firing, "12m", [(alert, 1)]), _test(since, "12m", [(alert, 600_000)]), _test(since, "20m", [])]
    promtool_query_test(tmp_path, _series(), cases)
