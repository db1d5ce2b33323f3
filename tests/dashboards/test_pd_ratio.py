"""The disaggregated-serving page's "Prefill pods per decode pod" on a real promtool, through the per-model
and role pod count it reads: prefill-only pods over decode-only pods of each model; pods that do both count
on neither side, and a model without decode-only pods has no ratio."""

from __future__ import annotations

from pathlib import Path

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from tests.dashboards.lint import panel_queries
from tests.support.packs import records_of
from tests.support.tools import promtool_record_test

WHERE = 'cluster="c1", namespace="llm"'
# pod: (model, role)
PODS = {
    "llama-p0": ("llama", "prefill"), "llama-p1": ("llama", "prefill"), "llama-p2": ("llama", "prefill"),
    "llama-d0": ("llama", "decode"), "llama-d1": ("llama", "decode"), "llama-both": ("llama", "both"),
    "qwen-p0": ("qwen", "prefill"), "qwen-both": ("qwen", "both"),
}


def _target(model: str) -> str:
    page = dict(all_dashboards(ObspackConfig()))["vllm-disaggregated-serving"]
    values = {"cluster": ".*", "namespace": ".*", "model": model, "pod": ".*"}
    (expr,) = panel_queries(page, "Prefill pods per decode pod", values)
    return expr


def test_prefill_pods_over_decode_pods_per_model(tmp_path: Path) -> None:
    series = []
    for pod, (model, role) in PODS.items():
        series += [
            {"series": f'{c.RUNNING}{{{WHERE}, pod="{pod}", model_name="{model}"}}', "values": "3x10"},
            {"series": f'{c.POD_ROLE}{{{WHERE}, pod="{pod}", role="{role}"}}', "values": "1x10"},
        ]
    llama = '{cluster="c1", namespace="llm", model_name="llama"}'
    checks = [
        # llama: 3 prefill-only pods over 2 decode-only ones; the pod doing both counts on neither side
        {"expr": _target("llama"), "eval_time": "5m", "exp_samples": [{"labels": llama, "value": 1.5}]},
        # qwen has no decode-only pod: no ratio, not a division by zero
        {"expr": _target("qwen"), "eval_time": "5m", "exp_samples": []},
        {"expr": _target(".*"), "eval_time": "5m", "exp_samples": [{"labels": llama, "value": 1.5}]},
    ]
    promtool_record_test(tmp_path, records_of("-vllm-roles.rules", c.ROLE_PODS), series, checks)
