"""The numbers add up: a fleet whose bill is known by construction, through promtool and the rendered rules.

Over three hours at one evaluation a minute, twelve GPUs are held by vLLM pods: two by a pod that serves
throughout, one by a StatefulSet pod that moves to another node halfway, one A100 split by MIG into a
3g and a 4g instance for two pods (one serving, one idle), one L4 time-sliced between two pods (counted
once), two by an engine put to sleep after an hour, two on a node without DCGM (kube-state-metrics'
requests, the GPU model from GPU Feature Discovery's node label), one on a node whose DCGM maps no pod
(requests, the model from DCGM), a prefill and a decode pod with one each, on a node whose
dcgm-exporter spells its label `hostname`, and a LeaderWorkerSet group whose leader and worker hold one each
(the worker serves no engine series: its GPU counts under the leader's model, serving while the leader
serves). A training pod's GPU, an unallocated GPU and production-stack's
router (with its own copies of the token counters) are in the data and must count for nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.rules.recording import all_recording_groups
from obspack.rules.recording.cost import integral
from tests.support.needed import needed_only
from tests.support.tools import require_tool

pytestmark = pytest.mark.tool

PRICED = ObspackConfig.model_validate({
    "cost": {
        "currency": "USD",
        "gpus": [{"model_regex": "NVIDIA H100.*", "hourly": 4}, {"model_regex": "NVIDIA A100.*", "hourly": 2}],
        "default_hourly": 1,
    },
})
# The same bill with the fleet's namespaces in scope: node series (kube_node_info, kube_node_labels) have
# no namespace, and the scope must not ask them for one (the pods on nodes without DCGM lost their GPUs).
SCOPED = PRICED.model_validate({**PRICED.model_dump(), "scope": {"namespace_regex": "inference|research|pd"}})
MINUTES = 200
AT, WINDOW = 190, "3h"  # the window's evaluations: minutes 10 to 190, 181 of them
SAMPLES = 181
H100, A100, L4 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L4"
LLAMA, MISTRAL, EMBED, QWEN, PHI = "llama", "mistral", "bge-m3", "qwen", "phi-4"
IMAGE = "vllm/vllm-openai:v0.11.1"


class Fleet:
    def __init__(self) -> None:
        self.series: list[dict[str, str]] = []

    def add(self, metric: str, labels: dict[str, str], values: str) -> None:
        inner = ", ".join(f"{k}={json.dumps(v)}" for k, v in labels.items())
        self.series.append({"series": f"{metric}{{{inner}}}", "values": values})

    def pod(self, ns: str, pod: str, model: str, *, running: str = f"2x{MINUTES}", tokens: tuple[int, int] = (600, 120),
            owner: tuple[str, str] = ("ReplicaSet", ""), team: str = "", role: str = "", awake: tuple[tuple[str, str], ...] = ()) -> None:
        where = {"cluster": "prod-a", "namespace": ns, "pod": pod}
        self.add("kube_pod_container_info", {**where, "container": "vllm", "image": IMAGE, "job": "kube-state-metrics"},
                 f"1x{MINUTES}")
        engine = {**where, "model_name": model, "engine": "0", "job": "vllm"}
        self.add("vllm:num_requests_running", engine, running)
        prompt, generated = tokens
        self.add("vllm:prompt_tokens_total", engine, f"0+{prompt}x{MINUTES}")
        self.add("vllm:generation_tokens_total", engine, f"0+{generated}x{MINUTES}")
        self.add("vllm:request_prefill_time_seconds_sum", engine, f"0+30x{MINUTES}")
        self.add("vllm:request_decode_time_seconds_sum", engine, f"0+90x{MINUTES}")
        for state, values in awake:
            self.add("vllm:engine_sleep_state", {**engine, "sleep_state": state}, values)
        kind, name = owner
        for replica in ("10.0.0.1:8080", "10.0.0.2:8080"):  # kube-state-metrics in HA
            ksm = {**where, "job": "kube-state-metrics", "instance": replica, "uid": f"uid-{pod}"}
            self.add("kube_pod_owner", {**ksm, "owner_kind": kind, "owner_name": name, "owner_is_controller": "true"},
                     f"1x{MINUTES}")
            labels = {**ksm, **({"label_team": team} if team else {}), **({"label_llm_d_ai_role": role} if role else {})}
            self.add("kube_pod_labels", labels, f"1x{MINUTES}")

    def worker(self, ns: str, pod: str, leader: str) -> None:
        """A LeaderWorkerSet worker: the vLLM image, owned by the StatefulSet named after its leader pod, and
        no engine series of its own."""
        where = {"cluster": "prod-a", "namespace": ns, "pod": pod}
        self.add("kube_pod_container_info", {**where, "container": "vllm", "image": IMAGE, "job": "kube-state-metrics"},
                 f"1x{MINUTES}")
        for replica in ("10.0.0.1:8080", "10.0.0.2:8080"):
            ksm = {**where, "job": "kube-state-metrics", "instance": replica, "uid": f"uid-{pod}"}
            self.add("kube_pod_owner", {**ksm, "owner_kind": "StatefulSet", "owner_name": leader,
                     "owner_is_controller": "true"}, f"1x{MINUTES}")  # fmt: skip

    def gpu(self, node: str, gpu: str, model: str, values: str, holder: dict[str, str] | None, *,
            host: str = "Hostname", **extra: str) -> None:
        labels = {"cluster": "prod-a", "instance": f"{node}:9400", "job": "nvidia-dcgm-exporter", "gpu": gpu,
                  "UUID": f"GPU-{node}-{gpu}", host: node, "modelName": model, "device": f"nvidia{gpu}",
                  **(holder or {}), **extra}
        self.add("DCGM_FI_DEV_FB_USED", labels, values)


def fleet() -> Fleet:
    f = Fleet()
    honor = lambda ns, pod: {"namespace": ns, "pod": pod, "container": "vllm"}  # noqa: E731
    moved = lambda ns, pod: {"namespace": "gpu-operator", "pod": "dcgm-exporter-x", "container": "exporter",  # noqa: E731
                             "exported_namespace": ns, "exported_pod": pod, "exported_container": "vllm"}
    # two H100s, serving throughout; a Deployment's pod (ReplicaSet -> Deployment)
    f.pod("inference", "chat-7d9f-abcde", LLAMA, owner=("ReplicaSet", "chat-7d9f"), team="search")
    for replica in ("10.0.0.1:8080", "10.0.0.2:8080"):
        f.add("kube_replicaset_owner", {"cluster": "prod-a", "namespace": "inference", "replicaset": "chat-7d9f",
              "owner_kind": "Deployment", "owner_name": "chat", "owner_is_controller": "true",
              "job": "kube-state-metrics", "instance": replica}, f"1x{MINUTES}")
    for g in ("0", "1"):
        f.gpu("gpu-1", g, H100, f"70000x{MINUTES}", honor("inference", "chat-7d9f-abcde"))
    # a StatefulSet pod that moves from gpu-2 to gpu-3 at minute 100 (the old GPU's series goes stale)
    f.pod("inference", "llama-sts-0", LLAMA, owner=("StatefulSet", "llama-sts"), team="search")
    f.gpu("gpu-2", "0", H100, "70000x99 stale", moved("inference", "llama-sts-0"))
    f.gpu("gpu-3", "0", H100, f"_x100 70000x{MINUTES - 101}", moved("inference", "llama-sts-0"))
    # one A100 split by MIG: 3g.40gb serving, 4g.40gb idle (no request runs, no token comes out)
    f.pod("research", "mistral-0", MISTRAL, owner=("StatefulSet", "mistral"), team="research")
    f.pod("research", "mistral-1", MISTRAL, owner=("StatefulSet", "mistral"), team="research",
          running=f"0x{MINUTES}", tokens=(0, 0))
    f.gpu("gpu-4", "0", A100, f"30000x{MINUTES}", honor("research", "mistral-0"), GPU_I_ID="1", GPU_I_PROFILE="3g.40gb")
    f.gpu("gpu-4", "0", A100, f"30000x{MINUTES}", honor("research", "mistral-1"), GPU_I_ID="2", GPU_I_PROFILE="4g.40gb")
    # one L4 time-sliced between two pods (dcgm-exporter --kubernetes-virtual-gpus: a series per pod)
    for pod, vgpu in (("embed-0", "0"), ("embed-1", "1")):
        f.pod("research", pod, EMBED, owner=("StatefulSet", "embed"), team="research")
        f.gpu("gpu-5", "0", L4, f"9000x{MINUTES}", honor("research", pod), vgpu=vgpu)
    # two H100s of an engine put to sleep at minute 60 (it stops serving then)
    f.pod("research", "qwen-0", QWEN, owner=("StatefulSet", "qwen"), running=f"1x59 0x{MINUTES - 60}",
          awake=(("awake", f"1x59 0x{MINUTES - 60}"), ("weights_offloaded", f"0x59 1x{MINUTES - 60}")))
    for g in ("0", "1"):
        f.gpu("gpu-6", g, H100, f"70000x{MINUTES}", honor("research", "qwen-0"))
    # two A100s on a node without DCGM: kube-state-metrics' requests, the model from GFD's node label
    f.pod("inference", "phi-0", PHI, owner=("StatefulSet", "phi"), team="search")
    for replica in ("10.0.0.1:8080", "10.0.0.2:8080"):
        ksm = {"cluster": "prod-a", "job": "kube-state-metrics", "instance": replica}
        where = {**ksm, "namespace": "inference", "pod": "phi-0", "uid": "uid-phi-0"}
        f.add("kube_pod_container_resource_requests", {**where, "container": "vllm", "node": "gpu-7",
              "resource": "nvidia_com_gpu", "unit": "integer"}, f"2x{MINUTES}")
        f.add("kube_pod_status_phase", {**where, "phase": "Running"}, f"1x{MINUTES}")
        f.add("kube_pod_status_phase", {**where, "phase": "Pending"}, f"0x{MINUTES}")
        f.add("kube_node_info", {**ksm, "node": "gpu-7"}, f"1x{MINUTES}")
        f.add("kube_node_labels", {**ksm, "node": "gpu-7", "label_nvidia_com_gpu_product": "NVIDIA-A100-SXM4-80GB"},
              f"1x{MINUTES}")
    # one A100 on a node whose DCGM runs without its pod mapping and with no GFD label: kube-state-metrics'
    # request, priced at the model DCGM reports for the node
    f.pod("inference", "phi-1", PHI, owner=("StatefulSet", "phi"), team="search")
    f.gpu("gpu-9", "0", A100, f"40000x{MINUTES}", None)
    for replica in ("10.0.0.1:8080", "10.0.0.2:8080"):
        ksm = {"cluster": "prod-a", "job": "kube-state-metrics", "instance": replica}
        where = {**ksm, "namespace": "inference", "pod": "phi-1", "uid": "uid-phi-1"}
        f.add("kube_pod_container_resource_requests", {**where, "container": "vllm", "node": "gpu-9",
              "resource": "nvidia_com_gpu", "unit": "integer"}, f"1x{MINUTES}")
        f.add("kube_pod_status_phase", {**where, "phase": "Running"}, f"1x{MINUTES}")
        f.add("kube_node_info", {**ksm, "node": "gpu-9"}, f"1x{MINUTES}")
    # disaggregated serving: a prefill pod and a decode pod (llm-d's role label), one H100 each
    f.pod("pd", "llama-prefill-0", LLAMA, owner=("StatefulSet", "llama-prefill"), role="prefill", tokens=(600, 6))
    f.pod("pd", "llama-decode-0", LLAMA, owner=("StatefulSet", "llama-decode"), role="decode", tokens=(600, 300))
    # (their node's dcgm-exporter is a newer release: it spells the node `hostname`)
    f.gpu("gpu-8", "0", H100, f"70000x{MINUTES}", honor("pd", "llama-prefill-0"), host="hostname")
    f.gpu("gpu-8", "1", H100, f"70000x{MINUTES}", honor("pd", "llama-decode-0"), host="hostname")
    # a LeaderWorkerSet group: the leader serves from minute 30; its worker holds an H100 on another node
    f.pod("inference", "llama-lws-0", LLAMA, owner=("StatefulSet", "llama-lws"), running=f"0x29 1x{MINUTES - 30}",
          tokens=(0, 0))
    f.worker("inference", "llama-lws-0-1", "llama-lws-0")
    f.gpu("gpu-10", "0", H100, f"70000x{MINUTES}", honor("inference", "llama-lws-0"))
    f.gpu("gpu-11", "0", H100, f"70000x{MINUTES}", honor("inference", "llama-lws-0-1"))
    # counted for nothing: a training pod's GPU, an unallocated GPU, the router's copies of the counters
    f.gpu("gpu-1", "7", H100, f"80000x{MINUTES}", {"namespace": "training", "pod": "trainer-0", "container": "torch"})
    f.gpu("gpu-1", "6", H100, f"0x{MINUTES}", None)
    router = {"cluster": "prod-a", "namespace": "inference", "pod": "vllm-router-5f9c", "server": "http://10.1.2.3:8000"}
    f.add("vllm:prompt_tokens_total", router, f"0+60000x{MINUTES}")
    f.add("vllm:input_tokens_total", {**router, "model": LLAMA}, f"0+60000x{MINUTES}")
    f.add("vllm:num_requests_running", router, f"50x{MINUTES}")
    return f


def gpu_hours(gpus: float, samples: int = SAMPLES) -> float:
    """GPU-hours of `gpus` held at `samples` evaluations a minute apart."""
    return gpus * samples / 60


# Known by construction: GPUs per model and state, at every evaluation of the window unless said.
MODEL_GPU_HOURS = {
    ("inference", LLAMA): gpu_hours(5),
    ("research", MISTRAL): gpu_hours(1),
    ("research", EMBED): gpu_hours(1),
    ("research", QWEN): gpu_hours(2),
    ("inference", PHI): gpu_hours(3),
    ("pd", LLAMA): gpu_hours(2),
}
FLEET_GPU_HOURS = gpu_hours(14)
STATES = {
    # qwen serves at minutes 10 to 59; the LeaderWorkerSet group's two from minute 30 (idle before)
    "serving": gpu_hours(3 + 3 / 7 + 1 + 3 + 2) + gpu_hours(2, 50) + gpu_hours(2, 161),
    "idle": gpu_hours(4 / 7) + gpu_hours(2, SAMPLES - 161),
    "asleep": gpu_hours(2, SAMPLES - 50),
}
PRICE = {H100: 4, A100: 2, L4: 1}
BILL = gpu_hours(5 * 4 + 2 * 4 + 2 * 4 + 1 * 2 + 3 * 2 + 1 * 1)  # llama, qwen, pd on H100; MIG and phi on A100; L4
TEAMS = {"search": gpu_hours(3 * 4 + 3 * 2), "research": gpu_hours(1 * 2 + 1 * 1)}  # qwen has no team
TOKENS_PER_SECOND = {  # input: pods that prefill; output: pods that decode; the router never
    ("inference", LLAMA, "input"): 20, ("inference", LLAMA, "output"): 4,
    ("pd", LLAMA, "input"): 10, ("pd", LLAMA, "output"): 5,
}


def _sel(record: str, **labels: str) -> str:
    """A record with label matchers; a value starting with `~` is a regex."""
    matchers = [f"{k}=~{json.dumps(v[1:])}" if v.startswith("~") else f"{k}={json.dumps(v)}" for k, v in labels.items()]
    return f"{record}{{{', '.join(matchers)}}}" if matchers else record


def checks(cfg: ObspackConfig) -> list[tuple[str, float]]:
    """(PromQL, the value it must have) at the end of the window."""

    def over(record: str, **labels: str) -> str:
        return f"sum({integral(cfg, _sel(record, **labels), WINDOW)})"

    out: list[tuple[str, float]] = [
        (over(c.MODEL_GPUS_ALLOCATED), FLEET_GPU_HOURS),
        (over(c.POD_GPUS_ALLOCATED), FLEET_GPU_HOURS),
    ]
    for (ns, model), hours in MODEL_GPU_HOURS.items():
        out.append((over(c.MODEL_GPUS_ALLOCATED, namespace=ns, model_name=model), hours))
    for state, hours in STATES.items():
        out.append((over(c.MODEL_GPUS_ALLOCATED, state=state), hours))
    # the time-sliced L4 once; the moved pod's GPU at every evaluation, on either node
    out.append((over(c.POD_GPUS_ALLOCATED, pod="~embed-.*"), gpu_hours(1)))
    out.append((over(c.POD_GPUS_ALLOCATED, pod="llama-sts-0"), gpu_hours(1)))
    # the worker: under its leader's model, idle until the leader serves
    worker = {"pod": "llama-lws-0-1", "model_name": LLAMA}
    out.append((over(c.POD_GPUS_ALLOCATED, **worker, state="serving"), gpu_hours(1, 161)))
    out.append((over(c.POD_GPUS_ALLOCATED, **worker, state="idle"), gpu_hours(1, SAMPLES - 161)))
    if cfg.cost.priced:
        out.append((over(c.WORKLOAD_COST), BILL))
        out.append((over(c.MODEL_COST), BILL))
        for team, cost in TEAMS.items():
            out.append((over(c.WORKLOAD_COST, team_name=team), cost))
        # chat's pod belongs to the Deployment chat, through its ReplicaSet
        out.append((over(c.WORKLOAD_COST, workload_type="Deployment", workload="chat"), gpu_hours(2 * 4)))
    for (ns, model, kind), per_second in TOKENS_PER_SECOND.items():
        tokens = over(c.MODEL_TOKENS, namespace=ns, model_name=model, tokens=kind)
        out.append((f"{tokens} * 3600", per_second * 60 * SAMPLES))
    return out


def promtool_file(cfg: ObspackConfig, folder: Path) -> Path:
    groups = [g.to_dict() for g in all_recording_groups(cfg)]
    (folder / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False), encoding="utf-8")
    tests = [
        {"expr": f"abs(({expr}) - {known!r}) < bool 1e-6", "eval_time": f"{AT}m", "exp_samples": [{"labels": "{}", "value": 1}]}
        for expr, known in checks(cfg)
    ]
    spec = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "group_eval_order": [g["name"] for g in groups],
        "tests": [{"name": "a bill known by construction", "interval": "1m", "input_series": fleet().series,
                   "promql_expr_test": tests}],
    }
    path = folder / "cost_accounting_test.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("cfg", [PRICED, ObspackConfig(), SCOPED], ids=["priced", "gpu-hours", "scoped"])
def test_gpu_hours_and_the_bill_add_up(cfg: ObspackConfig, tmp_path: Path) -> None:
    path = promtool_file(cfg, tmp_path)
    where = needed_only(tmp_path, [path.name], tmp_path / "needed")  # the groups the checks read, and theirs
    done = subprocess.run([require_tool("promtool"), "test", "rules", path.name], cwd=where, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
