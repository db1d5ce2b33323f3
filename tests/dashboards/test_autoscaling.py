"""The fleet page's autoscaling row on a real promtool: "Replicas the models need now" is the HPA's formula
(the model's pods times its signal) over every pod of the model, whatever pods the page's pod filter
selects. With the filter on one pod of four, it read the need of that one pod."""

from __future__ import annotations

from pathlib import Path

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from tests.dashboards.lint import panel_queries
from tests.support.tools import promtool_query_test

WHERE = 'cluster="c1", namespace="llm"'
MODEL = 'model_name="llama"'
SIGNAL = 1.5  # the model needs half as many pods again


def _needed(values: dict[str, str]) -> str:
    fleet = dict(all_dashboards(ObspackConfig()))[c.FLEET_DASHBOARD]
    (query,) = panel_queries(fleet, "Replicas the models need now (current x signal)", values)
    return query


def test_the_need_counts_every_pod_of_the_model_whatever_the_pod_filter(tmp_path: Path) -> None:
    series = [{"series": f"{c.SATURATION}{{{WHERE}, {MODEL}}}", "values": f"{SIGNAL}x10"}]
    series += [
        {"series": f'{c.RUNNING}{{{WHERE}, pod="vllm-{i}", {MODEL}}}', "values": "3x10"} for i in range(4)
    ]
    everything = {"cluster": "c1", "namespace": "llm", "model": ".*", "pod": ".*"}
    one_pod = {**everything, "pod": "vllm-0"}
    need = {"labels": f"{{{WHERE}, {MODEL}}}", "value": 6}  # ceil(4 pods x 1.5)
    checks = [{"expr": _needed(values), "eval_time": "5m", "exp_samples": [need]} for values in (everything, one_pod)]
    promtool_query_test(tmp_path, series, checks)
