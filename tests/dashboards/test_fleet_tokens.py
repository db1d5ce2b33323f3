"""The fleet page's "Tokens per second" on a real promtool, through the per-role records it reads: a
disaggregated request counts once, its prompt on the prefill pod and its tokens on the decode pod, as the
cost page counts it. Per pod, the decode pod counted each prompt a second time and the prefill pod one
token per request."""

from __future__ import annotations

from pathlib import Path

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from tests.dashboards.lint import panel_queries
from tests.support.packs import records_of
from tests.support.tools import promtool_record_test

VALUES = {"cluster": ".*", "namespace": ".*", "model": ".*"}
WHERE = 'cluster="c1", namespace="llm"'
# pod: (model, role, prompt tokens/s, generated tokens/s)
PODS = {
    "prefill-0": ("split", "prefill", 100, 1),
    "decode-0": ("split", "decode", 100, 50),
    "plain-0": ("plain", "both", 30, 20),
}


def _targets(pod: str) -> list[str]:
    fleet = dict(all_dashboards(ObspackConfig()))[c.FLEET_DASHBOARD]
    return panel_queries(fleet, "Tokens per second", {**VALUES, "pod": pod})


def test_a_disaggregated_request_counts_once(tmp_path: Path) -> None:
    series = []
    for pod, (model, role, prompt, generated) in PODS.items():
        where = f'{WHERE}, pod="{pod}"'
        series += [
            {"series": f'{c.PROMPT_RATE}{{{where}, model_name="{model}"}}', "values": f"{prompt}x10"},
            {"series": f'{c.GENERATION_RATE}{{{where}, model_name="{model}"}}', "values": f"{generated}x10"},
            {"series": f'{c.POD_ROLE}{{{where}, role="{role}"}}', "values": "1x10"},
        ]
    checks = []
    for pod in (".*", "decode-0"):  # every pod, and a pod filter, which does not narrow a model's tokens
        prompt, generated = _targets(pod)
        checks += [
            {"expr": expr, "eval_time": "5m", "exp_samples": [
                {"labels": f'{{{WHERE}, model_name="split"}}', "value": split},
                {"labels": f'{{{WHERE}, model_name="plain"}}', "value": plain},
            ]}
            for expr, split, plain in ((prompt, 100, 30), (generated, 50, 20))
        ]  # fmt: skip
    promtool_record_test(tmp_path, records_of("-vllm-roles.rules"), series, checks)
