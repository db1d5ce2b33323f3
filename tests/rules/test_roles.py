"""The prefill/decode roles (obspack/rules/roles.py) where their effect is not an alert: the user-facing SLO
events leave prefill-only pods out, by label or by name, and a pod whose label says it does both counts
whatever its name says. Checked on a real promtool."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from obspack import conventions as c
from obspack import slos
from obspack.catalogue import vllm_latency
from obspack.config import ObspackConfig
from obspack.rules import roles
from obspack.rules.alerts import disaggregation
from obspack.rules.recording import cost, slo
from obspack.rules.recording import roles as roles_recording
from obspack.rules.recording import vllm as vllm_recording
from tests.support.tools import promtool_query_test, promtool_record_test, require_tool

MODEL = "m"
FAST, SLOW = 0.1, 30.0  # seconds: under and over the default TTFT threshold


def _pod(pod: str, seconds: float, threshold: float) -> list[dict[str, str]]:
    """A pod's TTFT histogram: one request a second, each taking `seconds`."""
    metric = vllm_latency.SLO_HISTOGRAMS["time_to_first_token"][0]
    where = f'cluster="a", namespace="ns", pod="{pod}", model_name="{MODEL}", engine="0"'
    series = [{"series": f'{metric}_count{{{where}}}', "values": "0+60x10"}]
    series.append({"series": f'{metric}_bucket{{{where}, le="+Inf"}}', "values": "0+60x10"})
    fast = "0+60x10" if seconds < threshold else "0x10"
    series.append({"series": f'{metric}_bucket{{{where}, le="{threshold:g}"}}', "values": fast})
    return series


def _label(pod: str, role: str) -> dict[str, str]:
    return {"series": f'kube_pod_labels{{cluster="a", namespace="ns", pod="{pod}", {roles.ksm_label("llm-d.ai/role")}="{role}"}}',
            "values": "1x10"}


@pytest.mark.tool
def test_slo_events_leave_out_prefill_only_pods(tmp_path: Path) -> None:
    cfg = ObspackConfig()
    branch = slos.branches(cfg, "time_to_first_token")[0]
    t = branch.threshold
    assert t is not None and FAST < t < SLOW
    bad, every = slo.latency_events(cfg, "time_to_first_token", branch, "5m")
    rules = {"groups": [{"name": "t", "rules": [{"record": "t:bad", "expr": bad}, {"record": "t:all", "expr": every}]}]}
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    series = [
        *_pod("llama-decode-0", FAST, t),  # the user's request, on the decode pod: counted
        *_pod("llama-prefill-0", SLOW, t),  # prefill by name: left out
        *_pod("ds-9", SLOW, t), _label("ds-9", "encode-prefill"),  # prefill by label: left out
        *_pod("llama-prefill-1", SLOW, t), _label("llama-prefill-1", "prefill-decode"),  # label says both: counted
    ]
    running = [{"series": f'vllm:num_requests_running{{cluster="a", namespace="ns", pod="{p}", model_name="{MODEL}", engine="0"}}',
                "values": "1x10"} for p in ("llama-decode-0", "llama-prefill-0", "ds-9", "llama-prefill-1")]
    keep = 'cluster="a", namespace="ns", model_name="m"'
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": series + running,
            "promql_expr_test": [
                {"expr": "t:bad", "eval_time": "8m", "exp_samples": [{"labels": f"t:bad{{{keep}}}", "value": 1}]},
                {"expr": "t:all", "eval_time": "8m", "exp_samples": [{"labels": f"t:all{{{keep}}}", "value": 2}]},
            ],
        }],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test))
    done = subprocess.run([require_tool("promtool"), "test", "rules", "test.yaml"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_role_source_leaves_expressions_alone() -> None:
    cfg = ObspackConfig.model_validate({"disaggregation": {"role_label": "", "prefill_pod_regex": "", "decode_pod_regex": ""}})
    assert not roles.known(cfg)
    assert roles.without(cfg, "x", "decode") == "x"
    assert roles.with_role(cfg, "x", "y") == "x"


@pytest.mark.tool
def test_engine_records_per_model_and_role(tmp_path: Path) -> None:
    """The disaggregated-serving page's records (obspack/rules/recording/roles.py): each pod's engine records
    go to its role's aggregate, per model; a model without disaggregation is all `both`."""
    cfg = ObspackConfig()
    rules = [{"record": r.record, "expr": r.expr} for r in roles_recording.group(cfg).rules]  # type: ignore[union-attr]
    pods = (  # pod, model, role, requests waiting, KV cache usage, prompt tokens/s
        ("p-0", "llama", "prefill", 4, 0.2, 900),
        ("p-1", "llama", "prefill", 2, 0.4, 700),
        ("d-0", "llama", "decode", 1, 0.9, 100),
        ("q-0", "qwen", "both", 3, 0.5, 300),
    )
    where = 'cluster="a", namespace="ns"'
    series = []
    for pod, model, role, waiting, kv, prompt in pods:
        engine = f'{where}, pod="{pod}", model_name="{model}"'
        series += [
            {"series": f"{c.WAITING}{{{engine}}}", "values": f"{waiting}x10"},
            {"series": f"{c.KV_USAGE}{{{engine}}}", "values": f"{kv}x10"},
            {"series": f"{c.PROMPT_RATE}{{{engine}}}", "values": f"{prompt}x10"},
            {"series": f'{c.POD_ROLE}{{{where}, pod="{pod}", role="{role}"}}',
             "values": "1x10"},
        ]
    series.append({"series": f'{c.WAITING}{{{where}, pod="gone", model_name="llama"}}', "values": "50x10"})  # no owner: no role

    def expect(record: str, *samples: tuple[str, str, float]) -> dict[str, object]:
        return {"expr": record, "eval_time": "5m", "exp_samples": [
            {"labels": f'{record}{{{where}, model_name="{model}", role="{role}"}}', "value": value} for model, role, value in samples
        ]}  # fmt: skip

    promtool_record_test(tmp_path, rules, series, [
        expect(c.ROLE_WAITING, ("llama", "prefill", 3), ("llama", "decode", 1), ("qwen", "both", 3)),
        expect(c.ROLE_KV_USAGE_MAX, ("llama", "prefill", 0.4), ("llama", "decode", 0.9), ("qwen", "both", 0.5)),
        expect(c.ROLE_PROMPT_RATE, ("llama", "prefill", 1600), ("llama", "decode", 100), ("qwen", "both", 300)),
    ])  # fmt: skip


@pytest.mark.tool
def test_fleet_latency_records_leave_out_prefill_only_pods(tmp_path: Path) -> None:
    """The fleet page's per-model latency records count the users' requests as the SLOs do: a prefill-only
    pod's one-token copy of each request adds no first token. Its queue stays in the queue time, where a
    prefill backlog shows, and its finishes in the finish reasons (the graph says why they are `length`)."""
    cfg = ObspackConfig()
    groups = [vllm_recording.group(cfg), *vllm_recording.latency_groups(cfg)]
    wanted = {c.REQUEST_RATE, *(c.latency_bucket_record(f) for f in ("time_to_first_token", "request_queue_time"))}
    rules = [{"record": r.record, "expr": r.expr} for g in groups for r in g.rules if r.record in wanted]  # type: ignore[union-attr]
    assert len(rules) == 3
    where = 'cluster="a", namespace="ns", model_name="m"'
    series = []
    for pod, finished in (("llama-decode-0", "stop"), ("llama-prefill-0", "length")):  # 1 request a second each
        engine = f'{where}, pod="{pod}", engine="0"'
        series += [
            {"series": f"vllm:num_requests_running{{{engine}}}", "values": "1x10"},
            {"series": f'vllm:request_success_total{{{engine}, finished_reason="{finished}"}}', "values": "0+60x10"},
            {"series": f'vllm:time_to_first_token_seconds_bucket{{{engine}, le="+Inf"}}', "values": "0+60x10"},
            {"series": f'vllm:request_queue_time_seconds_bucket{{{engine}, le="+Inf"}}', "values": "0+60x10"},
        ]

    def per_second(record: str, value: float, **labels: str) -> dict[str, object]:
        extra = "".join(f', {k}="{v}"' for k, v in labels.items())
        return {"expr": f"round({record}{{{extra[2:]}}}, 0.001)", "eval_time": "8m",
                "exp_samples": [{"labels": f"{{{where}{extra}}}", "value": value}]}  # fmt: skip

    promtool_record_test(tmp_path, rules, series, [
        per_second(c.REQUEST_RATE, 1, finished_reason="stop"),
        per_second(c.REQUEST_RATE, 1, finished_reason="length"),  # the prefill pod's one-token requests
        per_second(c.latency_bucket_record("time_to_first_token"), 1, le="+Inf"),
        per_second(c.latency_bucket_record("request_queue_time"), 2, le="+Inf"),  # both pods queue
    ])  # fmt: skip


@pytest.mark.tool
def test_the_imbalance_alert_holds_while_a_pods_role_label_changes(tmp_path: Path) -> None:
    """Two kube-state-metrics replicas can disagree about a pod's role label for a scrape: the P/D alert
    joins one role per pod, so it still evaluates (a join on two roles would fail the whole rule), and the
    role record keeps one series per pod."""
    expr = disaggregation.prefill_decode_imbalance(ObspackConfig()).expr
    series = [_label("p-0", "prefill"), _label("d-0", "decode"), _label("d-0", "prefill")]  # d-0 in both at once
    for pod, waiting, kv in (("p-0", 12, 0.5), ("d-0", 0, 0.3)):
        where = f'cluster="a", namespace="ns", pod="{pod}", model_name="{MODEL}"'
        series += [
            {"series": f'vllm:num_requests_waiting{{{where}, engine="0"}}', "values": f"{waiting}x10"},
            {"series": f"{c.KV_USAGE}{{{where}}}", "values": f"{kv}x10"},
        ]
    series += [{"series": f'{c.VLLM_POD}{{cluster="a", namespace="ns", pod="{pod}"}}', "values": "1x10"} for pod in ("p-0", "d-0")]
    evaluates = f"vector(1) + on () 0 * (count({expr}) or vector(0))"
    per_pod = f"count({cost.roles(ObspackConfig())})"  # the role record: still one role per pod
    checks = [{"expr": e, "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": v}]} for e, v in ((evaluates, 1), (per_pod, 2))]
    promtool_query_test(tmp_path, series, checks)
