"""The GPU page's "Mean GPU utilisation" on a real promtool, through the per-model records it reads: the
mean over every selected GPU, so a pod counts as many times as it holds GPUs (a mean of the pods would
give a 2-GPU pod the weight of an 8-GPU one)."""

from __future__ import annotations

from pathlib import Path

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import all_dashboards
from tests.dashboards.lint import panel_queries
from tests.support.packs import records_of
from tests.support.tools import promtool_record_test

WHERE = 'cluster="c1", namespace="llm"'
# pod: (model, GPUs, utilisation of each of its GPUs in %)
PODS = {"big-0": ("llama", 8, 90), "small-0": ("llama", 2, 10), "other-0": ("qwen", 1, 40)}


def _target(model: str) -> str:
    page = dict(all_dashboards(ObspackConfig()))["gpu-by-workload"]
    values = {"cluster": ".*", "namespace": ".*", "model": model, "pod": ".*", "gpu_instance": ".*"}
    (expr,) = panel_queries(page, "Mean GPU utilisation", values)
    return expr


def test_the_mean_is_over_gpus_not_pods(tmp_path: Path) -> None:
    series = []
    for pod, (model, gpus, busy) in PODS.items():
        where = f'{WHERE}, pod="{pod}", model_name="{model}"'
        node = 'modelName="NVIDIA H100 80GB HBM3", Hostname="node-1", GPU_I_PROFILE=""'
        series += [
            {"series": f"{c.POD_NODE_GPU_COUNT}{{{where}, {node}}}", "values": f"{gpus}x10"},
            {"series": f"{c.POD_GPU_UTILIZATION}{{{where}}}", "values": f"{busy}x10"},
        ]
    checks = [
        # llama: (8 x 90 + 2 x 10) / 10 GPUs = 74 (the pods' mean would be 50); with qwen: 780 / 11
        {"expr": _target("llama"), "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": 74}]},
        {"expr": _target(".*"), "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": 780 / 11}]},
    ]
    rules = records_of("-dcgm-utilization.rules", c.MODEL_GPU_UTILIZATION_SUM, c.MODEL_GPU_COUNT)
    promtool_record_test(tmp_path, rules, series, checks)
