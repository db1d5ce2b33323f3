"""The Kubernetes side of the simulated pods: the kubelet's cAdvisor, kube-state-metrics and NVIDIA
dcgm-exporter, served the way the real ones serve them, so the memory-plane rules run on real scrapes.

`Cluster` holds the pods: each has a vLLM container (image, host-RAM working set, memory request and
limit, restarts, last termination) on a node, the GPUs it holds (framebuffer used of total), its owner and
its Kubernetes labels, and (but on a LeaderWorkerSet worker) the obspack exporter sidecar. Steer it with
`set_host_memory`, `set_vram` and `terminate`; `add` places a new pod. `FakeSources` serves it on
127.0.0.1, one path per exporter:

- `/nodes/<node>/metrics/cadvisor`: the node's kubelet. Every container's working set, spec limit and
  start time, plus the pod-level cgroup (`container=""`, as cAdvisor reports it) and the exporter sidecar.
  A restart gives the container a new cgroup (`id`): the old one's series stop, as the real kubelet's do.
- `/kube-state-metrics/metrics`: container info (image), resource requests and limits (memory and
  `nvidia_com_gpu`), the restart counter and, once a container terminated, the sticky
  `last_terminated_reason` and `last_terminated_exitcode`; each pod's owner (`kube_pod_owner`: a
  ReplicaSet, or the StatefulSets of a LeaderWorkerSet) and its allowlisted labels (`kube_pod_labels`,
  keys sanitised as kube-state-metrics does: `llm-d.ai/role` is `label_llm_d_ai_role`).
- `/nodes/<node>/dcgm`: the node's dcgm-exporter: each GPU's framebuffer (MiB), utilisation,
  temperature, power and last XID, with `pod`, `namespace` and `container` of the pod holding it, and an
  idle GPU with no pod. Scraped with `honor_labels: true` these labels stay; with the default `false`
  Prometheus moves them to `exported_pod`, `exported_namespace`, `exported_container`: the two label modes
  are made by the real Prometheus, not faked here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from obspack.demo.fake_vllm import CONTENT_TYPE
from obspack.demo.serving import TEXT, Answer, LocalServer
from obspack.rules.roles import ksm_label

GIB = 1024**3
VLLM_IMAGE = "docker.io/vllm/vllm-openai:v0.33.0"
EXPORTER_IMAGE = "ghcr.io/obspack/obspack:latest"
GPU_MODEL = "NVIDIA H100 80GB HBM3"
FB_TOTAL_MIB = 81559  # an H100 80GB as DCGM reports it
VLLM_CONTAINER = "vllm"
SIDECAR = "obspack-exporter"
PREALLOCATED = 0.9  # vLLM's default --gpu-memory-utilization
# The labels LeaderWorkerSet puts on the pods of a group (kube-state-metrics shows them where allowlisted).
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


@dataclass
class Gpu:
    index: int
    uuid: str
    used_ratio: float = PREALLOCATED  # framebuffer used / total
    utilization: float = 70.0  # percent
    temperature: float = 61.0
    power: float = 420.0
    xid: int = 0


@dataclass
class Pod:
    """One vLLM pod as Kubernetes and DCGM see it."""

    name: str
    namespace: str
    node: str
    gpus: list[Gpu]
    memory_limit: int = 64 * GIB
    memory_request: int = 48 * GIB
    working_set_ratio: float = 0.5  # host RAM working set / limit
    restarts: int = 0
    last_reason: str = ""  # kube-state-metrics' last terminated reason, once the container terminated
    last_exit_code: int = 0
    container_id: int = 1  # a restart gives the container a new cgroup
    started_at: float = field(default_factory=time.time)  # the vLLM container's current run, unix seconds
    labels: dict[str, str] = field(default_factory=dict)  # Kubernetes labels kube-state-metrics shows
    owner: tuple[str, str] = ("", "")  # (kind, name); empty: the ReplicaSet of a Deployment, named as its pods
    sidecar: bool = True  # runs the obspack exporter next to vLLM (a LeaderWorkerSet worker does not)

    @property
    def uid(self) -> str:
        return f"uid-{self.namespace}-{self.name}"

    @property
    def containers(self) -> tuple[str, ...]:
        return (VLLM_CONTAINER, SIDECAR) if self.sidecar else (VLLM_CONTAINER,)

    @property
    def owned_by(self) -> tuple[str, str]:
        return self.owner if self.owner[0] else ("ReplicaSet", self.name.rsplit("-", 1)[0])


@dataclass
class Cluster:
    """The simulated pods, by name. Every change takes the lock, so scrapes see consistent states."""

    pods: dict[str, Pod] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _gpus_placed: dict[str, int] = field(default_factory=dict)

    def add(
        self, name: str, namespace: str, node: str, gpus: int = 1, vram: float = PREALLOCATED, *,
        labels: dict[str, str] | None = None, owner: tuple[str, str] = ("", ""), sidecar: bool = True,
    ) -> Pod:
        """Place a pod on a node with `gpus` GPUs, each with `vram` of its framebuffer used; `labels`,
        `owner` and `sidecar` as in `Pod`."""
        with self._lock:
            first = self._gpus_placed.get(node, 0)
            self._gpus_placed[node] = first + gpus
            held = [Gpu(i, f"GPU-{node}-{i}", vram) for i in range(first, first + gpus)]
            pod = Pod(name, namespace, node, held, labels=dict(labels or {}), owner=owner, sidecar=sidecar)
            self.pods[name] = pod
            return pod

    def set_host_memory(self, name: str, ratio: float) -> None:
        """The vLLM container's working set, as a share of its memory limit."""
        with self._lock:
            self.pods[name].working_set_ratio = ratio

    def set_vram(self, name: str, ratio: float) -> None:
        """Framebuffer used / total on every GPU of the pod."""
        with self._lock:
            for gpu in self.pods[name].gpus:
                gpu.used_ratio = ratio

    def terminate(self, name: str, reason: str, exit_code: int) -> None:
        """The vLLM container ended and the kubelet restarted it: OOMKilled (137) or Error (a crash)."""
        with self._lock:
            pod = self.pods[name]
            pod.restarts += 1
            pod.last_reason, pod.last_exit_code = reason, exit_code
            pod.container_id += 1
            pod.started_at = time.time()

    def nodes(self) -> list[str]:
        with self._lock:
            return sorted({p.node for p in self.pods.values()})

    def snapshot(self) -> list[Pod]:
        """Copies of the pods, for one consistent exposition."""
        with self._lock:
            return [
                Pod(**{**p.__dict__, "gpus": [Gpu(**g.__dict__) for g in p.gpus], "labels": dict(p.labels)})
                for p in self.pods.values()
            ]


# ---------------------------------------------------------------------------------------------------------
# The three exporters, as client_python collectors over a snapshot


def _cadvisor(pods: list[Pod], node: str) -> Iterator[Metric]:
    labels = ["namespace", "pod", "container", "image", "id", "name"]
    working_set = GaugeMetricFamily("container_memory_working_set_bytes", "Current working set.", labels=labels)
    limit = GaugeMetricFamily("container_spec_memory_limit_bytes", "Memory limit of the container.", labels=labels)
    started = GaugeMetricFamily("container_start_time_seconds", "Start time of the container since unix epoch in seconds.", labels=labels)
    for pod in (p for p in pods if p.node == node):
        cgroup = f"/kubepods/burstable/pod{pod.uid}"
        vllm_bytes = int(pod.memory_limit * pod.working_set_ratio)
        sidecar_bytes = 200 * 1024**2 if pod.sidecar else 0
        for container, image, value, cap in (
            (VLLM_CONTAINER, VLLM_IMAGE, vllm_bytes, pod.memory_limit),
            (SIDECAR, EXPORTER_IMAGE, sidecar_bytes, GIB),
        ):
            if container not in pod.containers:
                continue
            cid = f"{cgroup}/{container}-{pod.container_id}"
            values = [pod.namespace, pod.name, container, image, cid, f"k8s_{container}_{pod.name}"]
            working_set.add_metric(values, value)
            limit.add_metric(values, cap)
            started.add_metric(values, round(pod.started_at, 3))
        pod_cgroup = [pod.namespace, pod.name, "", "", cgroup, ""]  # the whole pod: never a container
        working_set.add_metric(pod_cgroup, vllm_bytes + sidecar_bytes)
        limit.add_metric(pod_cgroup, 0)
    yield working_set
    yield limit
    yield started


def _kube_state_metrics(pods: list[Pod]) -> Iterator[Metric]:
    base = ["namespace", "pod", "uid", "container"]
    info = GaugeMetricFamily(
        "kube_pod_container_info", "Information about a container in a pod.", labels=[*base, "image", "image_spec"]
    )
    resources = ["node", "resource", "unit"]
    limits = GaugeMetricFamily("kube_pod_container_resource_limits", "Resource limits.", labels=[*base, *resources])
    requests = GaugeMetricFamily(
        "kube_pod_container_resource_requests", "Resource requests.", labels=[*base, *resources]
    )
    restarts = CounterMetricFamily(
        "kube_pod_container_status_restarts", "Restarts of the container.", labels=base
    )
    reason = GaugeMetricFamily(
        "kube_pod_container_status_last_terminated_reason",
        "Why the container last terminated.",
        labels=[*base, "reason"],
    )
    exit_code = GaugeMetricFamily(
        "kube_pod_container_status_last_terminated_exitcode", "Exit code of the last termination.", labels=base
    )
    who_pod = ["namespace", "pod", "uid"]
    owner = GaugeMetricFamily(
        "kube_pod_owner", "Information about the Pod's owner.", labels=[*who_pod, "owner_kind", "owner_name", "owner_is_controller"]
    )
    for pod in pods:
        owner.add_metric([pod.namespace, pod.name, pod.uid, *pod.owned_by, "true"], 1)
        for container, image in ((VLLM_CONTAINER, VLLM_IMAGE), (SIDECAR, EXPORTER_IMAGE)):
            if container not in pod.containers:
                continue
            who = [pod.namespace, pod.name, pod.uid, container]
            info.add_metric([*who, image, image], 1)
            restarts.add_metric(who, pod.restarts if container == VLLM_CONTAINER else 0)
        vllm = [pod.namespace, pod.name, pod.uid, VLLM_CONTAINER]
        limits.add_metric([*vllm, pod.node, "memory", "byte"], pod.memory_limit)
        limits.add_metric([*vllm, pod.node, "nvidia_com_gpu", "integer"], len(pod.gpus))
        requests.add_metric([*vllm, pod.node, "memory", "byte"], pod.memory_request)
        requests.add_metric([*vllm, pod.node, "nvidia_com_gpu", "integer"], len(pod.gpus))
        if pod.last_reason:
            reason.add_metric([*vllm, pod.last_reason], 1)
            exit_code.add_metric(vllm, pod.last_exit_code)
    yield from (info, limits, requests, restarts, reason, exit_code, owner)
    # One family, one label set: every pod has the label names any pod has, empty where it lacks the label.
    keys = sorted({ksm_label(key) for pod in pods for key in pod.labels})
    labels = GaugeMetricFamily("kube_pod_labels", "Kubernetes labels converted to Prometheus labels.", labels=[*who_pod, *keys])
    for pod in pods:
        mine = {ksm_label(key): value for key, value in pod.labels.items()}
        labels.add_metric([pod.namespace, pod.name, pod.uid, *(mine.get(key, "") for key in keys)], 1)
    yield labels


_DCGM_FIELDS = (
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", lambda g: round(FB_TOTAL_MIB * g.used_ratio)),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", lambda g: FB_TOTAL_MIB - round(FB_TOTAL_MIB * g.used_ratio)),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda g: g.utilization),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda g: g.temperature),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda g: g.power),
    ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", lambda g: g.xid),
)


def _dcgm(pods: list[Pod], node: str) -> Iterator[Metric]:
    """One node's GPUs; the next index after the pods' GPUs is an idle GPU without pod labels."""
    held = [(p, g) for p in pods if p.node == node for g in p.gpus]
    idle = Gpu(max((g.index for _, g in held), default=-1) + 1, f"GPU-{node}-idle", used_ratio=0.0, utilization=0)
    hardware = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"]
    for name, help_text, value in _DCGM_FIELDS:
        family = GaugeMetricFamily(name, help_text, labels=[*hardware, "container", "namespace", "pod"])
        for pod, gpu in [*held, (None, idle)]:
            where = [VLLM_CONTAINER, pod.namespace, pod.name] if pod else ["", "", ""]
            ids = [str(gpu.index), gpu.uuid, f"00000000:{0x18 + gpu.index:02X}:00.0", f"nvidia{gpu.index}"]
            family.add_metric([*ids, GPU_MODEL, node, "550.90.07", *where], value(gpu))
        yield family


class _Source:
    """A client_python collector over one exporter's view of the cluster."""

    def __init__(self, series: Iterator[Metric]) -> None:
        self._series = list(series)

    def collect(self) -> Iterator[Metric]:
        return iter(self._series)


def exposition(cluster: Cluster, path: str) -> bytes | None:
    """The text one exporter serves at `path`, or None for an unknown path."""
    pods = cluster.snapshot()
    parts = path.strip("/").split("/")
    if parts == ["kube-state-metrics", "metrics"]:
        series = _kube_state_metrics(pods)
    elif len(parts) == 4 and parts[0] == "nodes" and parts[2:] == ["metrics", "cadvisor"]:
        series = _cadvisor(pods, parts[1])
    elif len(parts) == 3 and parts[0] == "nodes" and parts[2] == "dcgm":
        series = _dcgm(pods, parts[1])
    else:
        return None
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Source(series))
    return generate_latest(registry)


class FakeSources:
    """`Cluster`'s exporters over HTTP on 127.0.0.1 (see the module doc for the paths)."""

    def __init__(self, cluster: Cluster, port: int = 0) -> None:
        self.cluster = cluster
        self._server = LocalServer(self._answer, "fake-k8s", port)

    @property
    def address(self) -> str:
        return self._server.address

    def stop(self) -> None:
        self._server.stop()

    def _answer(self, path: str) -> Answer:
        body = exposition(self.cluster, path)
        return (200, CONTENT_TYPE, body) if body is not None else (404, TEXT, b"not found\n")
