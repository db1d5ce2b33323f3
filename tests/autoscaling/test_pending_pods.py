"""VLLMAutoscalerScaleUpBlocked on what kube-state-metrics really gives a pod the scheduler has not placed:
no container status (so no kube_pod_container_info and no image), only its requests, its owner and its
namespace. A workload that an obspack autoscaler scales from zero has no vLLM pod in its namespace: its
pending pods are known by their owner. Run by the real promtool."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from obspack.config import ObspackConfig
from obspack.pack import build
from obspack.pack.shipped_tests.alerts import expected_alert
from obspack.render.files import ALERTS_FILE, RECORDING_FILE, pack_files
from obspack.rules.alerts import all_alerts
from tests.support.packs import write_files
from tests.support.tools import require_tool

pytestmark = pytest.mark.tool

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
AUTOSCALERS = [
    {"name": "batch", "namespace": "llm-batch", "model": MODEL, "min_replicas": 0,
     "wake_query": 'sum(inference_pool_queue{pool="batch"})', "target": {"name": "vllm-batch"}},
    {"name": "big", "namespace": "llm-big", "model": MODEL, "target": {"kind": "LeaderWorkerSet", "name": "big"}},
]


def pending_pod(namespace: str, pod: str, owner_kind: str, owner: str, gpus: int, container: str = "vllm") -> list[dict[str, str]]:
    """The kube-state-metrics series of an unschedulable pod (no node yet, so no node label)."""
    where = f'namespace="{namespace}", pod="{pod}", job="kube-state-metrics"'
    series = [
        (f"kube_pod_status_unschedulable{{{where}}}", "1x30"),
        (f'kube_pod_owner{{{where}, owner_kind="{owner_kind}", owner_name="{owner}", owner_is_controller="true"}}', "1x30"),
        (f'kube_pod_container_resource_requests{{{where}, container="{container}", resource="memory", unit="byte"}}', "68719476736x30"),
    ]
    if gpus:
        series.append(
            (f'kube_pod_container_resource_requests{{{where}, container="{container}", resource="nvidia_com_gpu", unit="integer"}}', f"{gpus}x30")
        )
    return [{"series": s, "values": v} for s, v in series]


def run(cfg: ObspackConfig, folder: Path, series: list[dict[str, str]], firing: list[dict[str, object]]) -> subprocess.CompletedProcess[str]:
    write_files(pack_files(build(cfg)), folder)
    test = {
        "rule_files": [f"../{RECORDING_FILE}", f"../{ALERTS_FILE}"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [{"eval_time": "25m", "alertname": "VLLMAutoscalerScaleUpBlocked", "exp_alerts": firing}],
        }],
    }
    (folder / "tests" / "pending_test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    return subprocess.run(
        [require_tool("promtool"), "test", "rules", "pending_test.yaml"], capture_output=True, text=True, cwd=folder / "tests", timeout=120
    )


def expected(cfg: ObspackConfig, *pods: tuple[str, str, int]) -> list[dict[str, object]]:
    """The alert on each pod, valued with the GPUs it asks for (the description says how many)."""
    rule = next(r for r in all_alerts(cfg) if r.alert == "VLLMAutoscalerScaleUpBlocked")
    return [expected_alert(rule, {"namespace": ns, "pod": pod}, gpus) for ns, pod, gpus in pods]


def test_pods_of_autoscaled_workloads_fire_where_no_vllm_pod_runs(tmp_path: Path) -> None:
    cfg = ObspackConfig.model_validate({"autoscaling": {"autoscalers": AUTOSCALERS}})
    series = [
        *pending_pod("llm-batch", "vllm-batch-7d9f8c6b5-x2x4q", "ReplicaSet", "vllm-batch-7d9f8c6b5", 4),
        *pending_pod("llm-big", "big-0", "StatefulSet", "big", 8),  # the leader of a LeaderWorkerSet group
        *pending_pod("llm-big", "big-0-1", "StatefulSet", "big-0", 8),  # one of its workers
        # quiet: another Deployment whose name starts the same, a CPU-only pod of the autoscaled one, and a GPU
        # pod of another workload in a namespace without vLLM
        *pending_pod("llm-batch", "vllm-batch-eval-5c7b9d8f4-abcde", "ReplicaSet", "vllm-batch-eval-5c7b9d8f4", 1),
        *pending_pod("llm-batch", "vllm-batch-7d9f8c6b5-cpu01", "ReplicaSet", "vllm-batch-7d9f8c6b5", 0),
        *pending_pod("llm-big", "trainer-0", "StatefulSet", "trainer", 8),
    ]
    fired = run(cfg, tmp_path, series, expected(cfg, ("llm-batch", "vllm-batch-7d9f8c6b5-x2x4q", 4), ("llm-big", "big-0", 8), ("llm-big", "big-0-1", 8)))
    assert fired.returncode == 0, fired.stdout + fired.stderr


def test_without_the_autoscalers_the_same_pods_stay_quiet(tmp_path: Path) -> None:
    """The owner is what names them vLLM: with no autoscaler in the config, nothing fires."""
    cfg = ObspackConfig()
    series = [
        *pending_pod("llm-batch", "vllm-batch-7d9f8c6b5-x2x4q", "ReplicaSet", "vllm-batch-7d9f8c6b5", 4),
        *pending_pod("llm-big", "big-0", "StatefulSet", "big", 8),
    ]
    quiet = run(cfg, tmp_path, series, [])
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr


def test_a_container_name_names_a_pending_pod_vllm(tmp_path: Path) -> None:
    """vllm_containers.name_regex reaches pending pods through their requests, which carry the container."""
    cfg = ObspackConfig.model_validate({"vllm_containers": {"name_regex": "vllm|engine"}})
    series = [
        *pending_pod("research", "qwen-0", "StatefulSet", "qwen", 2, container="engine"),
        *pending_pod("research", "embedder-0", "StatefulSet", "embedder", 1, container="embedder"),
    ]
    fired = run(cfg, tmp_path, series, expected(cfg, ("research", "qwen-0", 2)))
    assert fired.returncode == 0, fired.stdout + fired.stderr
