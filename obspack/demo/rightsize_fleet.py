"""One OpenMetrics fleet for `obspack rightsize`, whose right answers are known by construction.

Fourteen days (END - WINDOW to END) in two clusters: the series the questions classify step by step every
5 minutes (working set, start times, running requests, framebuffer), those only read over the whole window
hourly, and counters every 6 hours, so the file stays small enough to backfill in a few seconds.
Each workload is its own namespace; `EXPECTED` below says what it must get. The fleet also carries what
real ones do: kube-state-metrics from two HA replicas (every series twice), cAdvisor's pod-level cgroup
(`container=""`, larger than the container), production-stack's router re-exporting
`vllm:num_requests_running` without `model_name` (500 running), dcgm-exporter in both label modes
(`pod=` and `exported_pod=`).

| namespace | owner | what it is built to show |
|---|---|---|
| rs-load | Deployment vllm-load | peaks at 28 GiB while loading, serves at 12 GiB, under a 32 GiB limit |
| rs-oom | Deployment vllm-oom | climbs to its 24 GiB limit on day 10 and is OOM-killed, serves at 18 GiB |
| rs-context | Deployment vllm-context | prompts whose p99.9 is 7,500 tokens under max_model_len 131072 |
| rs-batch | StatefulSet batch-llm | a running peak of 12 requests (the router copy says 500) |
| rs-kv | LeaderWorkerSet kv-lws | a KV cache that preempts, low prefix-cache hits, a fragmented CUDA allocator |
| rs-release | Deployment rel | image v0.31.0 raised load and serving RAM by 30% over v0.30.0 (kube-state-metrics starts only) |
| rs-new | Deployment fresh-app | two days of data only, no kube-state-metrics (owner read from the pod name) |
| rs-ok | Deployment steady | sized right, in both clusters (same names) |
| rs-liveness | Deployment leaky | climbs to 22 GiB under a 24 GiB limit and is restarted by its liveness probe, not the kernel |
| rs-longrun | Deployment longrun | started 20 days before the window under a 96 GiB limit: its 30 GiB model load is not in the data |
| rs-prewindow | Deployment warm | started 3 days before the window; the data there still holds its 30 GiB load |
| rs-canary | Deployments chat and chat-canary | same image and model: chat started before the window, chat-canary loaded 26 GiB inside it |
| rs-scale | Deployment scale | a queue that peaks daily, and a TTFT SLO that burns from a queue of 4 up (`rightsize --autoscaling`) |

Each workload serves its own model, as real fleets do, except chat and chat-canary, which share one (and
their image): a workload whose model load the window did not see takes its load peak from such a sibling.
Series stop at a container's last sample, as they do when a cgroup goes away; where a run ends (an OOM
kill, a liveness restart), its last sample lies more than the 5-minute lookback before the next 15-minute
step, as a real kill does more often than not.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

MIB = 1024 * 1024
GIB = 1024 * MIB
DAY = 86400
STEP = 300
END = 1_791_280_800  # 2026-10-06T10:00:00Z: the window sits in one of promtool's 1458 h blocks
WINDOW = 14 * DAY
T0 = END - WINDOW
GPU_MIB = 81559  # an H100's framebuffer as dcgm-exporter reports it
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
IMAGE = "docker.io/vllm/vllm-openai:v0.33.0"

Samples = list[tuple[int, float]]


def grid(start: float, end: float, step: int = STEP, since: int = T0 - 3600) -> range:
    """Multiples of `step` in [start, end], clipped to `since` (an hour before the window) and to END."""
    first = max(int(start), since)
    first = -(-first // step) * step
    return range(first, int(min(end, END)) + 1, step)


def sparse(start: float, end: float, every: int) -> list[int]:
    """Every `every` seconds, plus the last 5-minute point (so `last_over_time` at the end finds it)."""
    points = list(grid(start, end, every))
    last = grid(start, end)
    if last and (not points or points[-1] != last[-1]):
        points.append(last[-1])
    return points


def day(t: int) -> bool:
    return 8 <= (t // 3600) % 24 < 20


def _hash(*parts: object) -> str:
    return f"{zlib.crc32('/'.join(map(str, parts)).encode()):08x}"


@dataclass
class Run:
    """One run of a container: from `start` to `end`, its working set at (time, seconds since start)."""

    start: int
    end: int
    ram: Callable[[int, float], float]
    killed: str | None = None  # the reason it ended with (kube-state-metrics' last terminated reason)


@dataclass
class Pod:
    cluster: str
    namespace: str
    name: str
    runs: list[Run]
    limit: float
    request: float
    image: str = IMAGE
    owner: tuple[str, str] | None = None  # kube_pod_owner (kind, name); None: no kube-state-metrics at all
    cadvisor_start: bool = True  # container_start_time_seconds (else kube_pod_container_state_started)
    spec_limit: bool = False  # cAdvisor's container_spec_memory_limit_bytes
    lws: str | None = None  # kube_pod_labels' leaderworkerset name
    dcgm_mode: str = "pod"
    pod_cgroup: bool = False  # cAdvisor's pod-level cgroup series too
    since: int = T0 - 3600  # the first time the data holds for it (earlier: before the backend's retention)

    @property
    def start(self) -> int:
        return self.runs[0].start

    @property
    def end(self) -> int:
        return self.runs[-1].end

    @property
    def uid(self) -> str:
        return _hash("uid", self.cluster, self.name)


@dataclass
class Engine:
    """What the vLLM engine of a pod reports."""

    running: Callable[[int], float] = lambda t: 3.0 if day(t) else 0.0
    waiting: Callable[[int], float] = lambda t: 0.0
    capacity_waits: Callable[[int], float] | None = None  # waiting_by_reason (vLLM 0.20+); None: older
    kv: Callable[[int], float] = lambda t: 0.4 if day(t) else 0.1
    preemptions: float = 0.0  # over the pod's life
    requests: float = 1_000_000.0  # over the pod's life
    prompt_cdf: dict[float, float] = field(default_factory=lambda: {100: 0.3, 500: 0.8, 1000: 0.99, 2000: 1.0})
    generation_cdf: dict[float, float] = field(default_factory=lambda: {100: 0.5, 200: 0.998, 500: 1.0})
    iteration_cdf: dict[float, float] = field(default_factory=lambda: {256: 0.9, 512: 0.995, 1024: 1.0})
    max_model_len: int = 8192
    prefix_hit_rate: float = 0.5
    config: dict[str, str] = field(default_factory=dict)  # cache_config_info labels beyond the defaults
    fb_used_mib: Callable[[int, float], float] = lambda t, age: 0.9 * GPU_MIB
    fragmentation: float = 0.03
    split_gib: float | None = None  # the allocator's inactive split blocks (default: `fragmentation` of 1 GiB unused)
    alloc_retries: float = 0.0
    dense: bool = False  # waiting and KV usage every step (else hourly)
    model: str = MODEL
    ttft_slow: Callable[[int], float] | None = None  # share of first tokens over 2.5 s at t (None: no TTFT histogram)
    ttft_rate: float = 5.0  # first tokens per second, with ttft_slow


def buckets_1_2_5(limit: int) -> list[float]:
    """vLLM's request-token buckets: 1, 2, 5, 10, 20, 50, ... up to max_model_len."""
    out, exponent = [], 0
    while True:
        for m in (1, 2, 5):
            value = m * 10**exponent
            if value > limit:
                return [float(b) for b in out]
            out.append(value)
        exponent += 1


ITERATION_BUCKETS = [1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0]


def _cdf(anchors: dict[float, float], bound: float) -> float:
    below = [share for b, share in anchors.items() if b <= bound]
    return max(below) if below else 0.0


class OpenMetrics:
    """Families of series, written family by family, each series in time order (what promtool reads).

    Each family's samples go to their own scratch file as they are added, so a fleet of thousands of pods
    is written without holding it in memory; `write` joins them."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        scratch.mkdir(parents=True, exist_ok=True)
        self.families: dict[str, tuple[str, Path]] = {}
        self._open: dict[str, IO[str]] = {}
        self.samples = 0

    def add(self, family: str, kind: str, name: str, labels: dict[str, str], samples: Iterable[tuple[int, float]]) -> None:
        kept = sorted(samples)
        if not kept:
            return
        if family not in self.families:
            path = self.scratch / f"{len(self.families):03d}.om"
            self.families[family] = (kind, path)
            self._open[family] = path.open("w", encoding="utf-8")
        text = ",".join(f'{k}="{v}"' for k, v in labels.items())
        self._open[family].write("".join(f"{name}{{{text}}} {v!r} {t}\n" for t, v in kept))
        self.samples += len(kept)

    def write(self, path: Path) -> int:
        for handle in self._open.values():
            handle.close()
        with path.open("w", encoding="utf-8") as out:
            for family, (kind, part) in self.families.items():
                out.write(f"# HELP {family} {family}\n# TYPE {family} {kind}\n")
                with part.open(encoding="utf-8") as source:
                    shutil.copyfileobj(source, out, 1 << 20)
                part.unlink()
            out.write("# EOF\n")
        return self.samples


class Fleet:
    def __init__(self, scratch: Path) -> None:
        self.om = OpenMetrics(scratch)
        self.pods = 0
        self.gpus: dict[tuple[str, str], int] = {}

    # -- kubelet / cAdvisor ------------------------------------------------------------------------------

    def cadvisor(self, pod: Pod) -> None:
        node = f"node-{_hash(pod.name)[:4]}"
        base = {"cluster": pod.cluster, "namespace": pod.namespace, "pod": pod.name, "job": "kubelet", "node": node}
        whole: Samples = []
        for i, run in enumerate(pod.runs):
            cid = _hash("cid", pod.cluster, pod.name, i)
            labels = {**base, "container": "vllm", "id": f"/kubepods/pod{pod.uid}/{cid}", "image": pod.image}
            ram = [(t, float(run.ram(t, t - run.start))) for t in grid(run.start, run.end - 1, since=pod.since)]
            self.om.add("container_memory_working_set_bytes", "gauge", "container_memory_working_set_bytes", labels, ram)
            whole += [(t, v + GIB) for t, v in ram]
            if pod.cadvisor_start:
                self.om.add("container_start_time_seconds", "gauge", "container_start_time_seconds", labels,
                            [(t, float(run.start)) for t, _ in ram])
            if pod.spec_limit:
                self.om.add("container_spec_memory_limit_bytes", "gauge", "container_spec_memory_limit_bytes", labels,
                            [(t, pod.limit) for t, _ in ram])
        if pod.pod_cgroup:  # the pod-level cgroup: container="", no image, more than the container
            cgroup = {**base, "container": "", "id": f"/kubepods/pod{pod.uid}", "image": ""}
            self.om.add("container_memory_working_set_bytes", "gauge", "container_memory_working_set_bytes", cgroup, whole)

    # -- kube-state-metrics ------------------------------------------------------------------------------

    def ksm(self, pod: Pod) -> None:
        if pod.owner is None:
            return
        hourly = sparse(pod.start, pod.end - 1, 3600)
        for replica in ("10.96.0.20:8080", "10.96.0.21:8080"):
            base = {"cluster": pod.cluster, "namespace": pod.namespace, "pod": pod.name, "uid": pod.uid,
                    "job": "kube-state-metrics", "instance": replica}
            kind, name = pod.owner
            self.om.add("kube_pod_owner", "gauge", "kube_pod_owner",
                        {**base, "owner_kind": kind, "owner_name": name, "owner_is_controller": "true"},
                        [(t, 1.0) for t in hourly])
            container = {**base, "container": "vllm"}
            self.om.add("kube_pod_container_info", "gauge", "kube_pod_container_info",
                        {**container, "image": pod.image, "image_spec": pod.image, "container_id": f"containerd://{_hash(pod.name)}"},
                        [(t, 1.0) for t in hourly])
            kills = {t for r in pod.runs if r.killed for t in grid(r.end - 3600, r.end + 3600)}
            for family, value, times in (
                ("kube_pod_container_resource_limits", pod.limit, sorted(kills | set(hourly))),  # read at a kill
                ("kube_pod_container_resource_requests", pod.request, hourly),
            ):
                self.om.add(family, "gauge", family, {**container, "resource": "memory", "unit": "byte"},
                            [(t, value) for t in times])
            near = {t for r in pod.runs[1:] for t in grid(r.start - 3600, r.start + 3600)}
            restarts = [(t, float(sum(1 for r in pod.runs[1:] if r.start <= t))) for t in sorted(near | set(hourly))]
            self.om.add("kube_pod_container_status_restarts", "counter", "kube_pod_container_status_restarts_total", container, restarts)
            for run in pod.runs:
                if run.killed:
                    self.om.add("kube_pod_container_status_last_terminated_reason", "gauge",
                                "kube_pod_container_status_last_terminated_reason", {**container, "reason": run.killed},
                                [(t, 1.0) for t in sorted(kills | set(hourly)) if t >= run.end])
            if not pod.cadvisor_start:
                started = [(t, float(max(r.start for r in pod.runs if r.start <= t))) for t in grid(pod.start, pod.end - 1)]
                self.om.add("kube_pod_container_state_started", "gauge", "kube_pod_container_state_started", container, started)
            if pod.lws:
                self.om.add("kube_pod_labels", "gauge", "kube_pod_labels",
                            {**base, "label_leaderworkerset_sigs_k8s_io_name": pod.lws}, [(t, 1.0) for t in hourly])

    def replicaset(self, cluster: str, namespace: str, replicaset: str, deployment: str, start: int) -> None:
        for replica in ("10.96.0.20:8080", "10.96.0.21:8080"):
            labels = {"cluster": cluster, "namespace": namespace, "replicaset": replicaset, "job": "kube-state-metrics",
                      "instance": replica, "owner_kind": "Deployment", "owner_name": deployment, "owner_is_controller": "true"}
            self.om.add("kube_replicaset_owner", "gauge", "kube_replicaset_owner", labels, [(t, 1.0) for t in sparse(start, END, 3600)])

    # -- vLLM, dcgm-exporter, the obspack exporter -------------------------------------------------------

    def engine(self, pod: Pod, e: Engine) -> None:
        labels = {"cluster": pod.cluster, "namespace": pod.namespace, "pod": pod.name, "container": "vllm",
                  "instance": f"10.0.{int(_hash(pod.name)[:2], 16)}.2:8000", "job": "vllm", "engine": "0",
                  "model_name": e.model}
        life = list(grid(pod.start, pod.end - 1))
        hourly = sparse(pod.start, pod.end - 1, 3600)
        often = life if e.dense else hourly  # gauges only range functions read: hourly unless the test needs steps
        gauges = {
            "vllm:num_requests_running": (e.running, life),  # the traffic mask reads it every step
            "vllm:num_requests_waiting": (lambda t: e.waiting(t) + (e.capacity_waits(t) if e.capacity_waits else 0.0), often),
            "vllm:kv_cache_usage_perc": (e.kv, often),
        }
        for name, (fn, times) in gauges.items():
            self.om.add(name, "gauge", name, labels, [(t, float(fn(t))) for t in times])
        if e.capacity_waits is not None:
            for reason, fn in (("capacity", e.capacity_waits), ("deferred", lambda t: 0.0)):
                self.om.add("vllm:num_requests_waiting_by_reason", "gauge", "vllm:num_requests_waiting_by_reason",
                            {**labels, "reason": reason}, [(t, float(fn(t))) for t in often])
        config = {k: v for k, v in labels.items() if k != "model_name"}
        config.update({"block_size": "16", "gpu_memory_utilization": "0.9", "enable_prefix_caching": "True",
                       "num_gpu_blocks": "27000", "cache_dtype": "auto", **e.config})
        self.om.add("vllm:cache_config_info", "gauge", "vllm:cache_config_info", config, [(t, 1.0) for t in hourly])
        counters = sparse(pod.start, pod.end - 1, 6 * 3600)
        span = pod.end - 1 - pod.start

        def grown(total: float) -> Samples:
            return [(t, total * (t - pod.start) / span) for t in counters]

        self.om.add("vllm:num_preemptions", "counter", "vllm:num_preemptions_total", labels, grown(e.preemptions))
        queries = e.requests * 600
        self.om.add("vllm:prefix_cache_queries", "counter", "vllm:prefix_cache_queries_total", labels, grown(queries))
        self.om.add("vllm:prefix_cache_hits", "counter", "vllm:prefix_cache_hits_total", labels, grown(queries * e.prefix_hit_rate))
        for family, bounds, cdf in (
            ("vllm:request_prompt_tokens", buckets_1_2_5(e.max_model_len), e.prompt_cdf),
            ("vllm:request_generation_tokens", buckets_1_2_5(e.max_model_len), e.generation_cdf),
            ("vllm:iteration_tokens_total", ITERATION_BUCKETS, e.iteration_cdf),
        ):
            for bound in [*bounds, float("inf")]:
                share = 1.0 if bound == float("inf") else _cdf(cdf, bound)
                le = "+Inf" if bound == float("inf") else f"{bound:.1f}"
                self.om.add(family, "histogram", f"{family}_bucket", {**labels, "le": le}, grown(e.requests * share))
            self.om.add(family, "histogram", f"{family}_count", labels, grown(e.requests))
            self.om.add(family, "histogram", f"{family}_sum", labels, grown(e.requests * 300))
        if e.ttft_slow is not None:
            self.ttft(labels, e, life)
        self.dcgm(pod, e, life)
        exporter = {**labels, "container": "obspack-exporter", "job": "obspack-exporter", "device": "0", "pid": "100"}
        exporter.pop("model_name")
        exporter.pop("engine")
        self.om.add("obspack_cuda_allocator_fragmentation_ratio", "gauge", "obspack_cuda_allocator_fragmentation_ratio",
                    exporter, [(t, e.fragmentation) for t in hourly])
        # of about 1 GiB the allocator holds unused, as on an H100 (docs/exporter.md)
        split = (e.fragmentation if e.split_gib is None else e.split_gib) * GIB
        self.om.add("obspack_cuda_allocator_inactive_split_bytes", "gauge", "obspack_cuda_allocator_inactive_split_bytes",
                    exporter, [(t, split) for t in hourly])
        self.om.add("obspack_cuda_alloc_retries", "counter", "obspack_cuda_alloc_retries_total", exporter,
                    [(t, e.alloc_retries * (t - pod.start) / span) for t in hourly])

    def ttft(self, labels: dict[str, str], e: Engine, life: list[int]) -> None:
        """vLLM's time-to-first-token histogram every step: `ttft_rate` first tokens a second, `ttft_slow(t)`
        of them slower than 2.5 s (half in the 5 s bucket, half in the 10 s one), the rest in the 0.25 s one."""
        slow = e.ttft_slow
        assert slow is not None
        bounds = (0.001, 0.01, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, math.inf)
        total = fast = 0.0
        rows: dict[float, Samples] = {b: [] for b in bounds}
        previous = life[0] if life else 0
        for t in life:
            n = e.ttft_rate * (t - previous)
            previous = t
            total += n
            fast += n * (1 - slow(t))
            for b in bounds:
                value = 0.0 if b < 0.25 else fast if b < 5.0 else fast + (total - fast) / 2 if b < 10.0 else total
                rows[b].append((t, value))
        for b, samples in rows.items():
            le = "+Inf" if b == math.inf else repr(b)
            self.om.add("vllm:time_to_first_token_seconds", "histogram", "vllm:time_to_first_token_seconds_bucket",
                        {**labels, "le": le}, samples)
        self.om.add("vllm:time_to_first_token_seconds", "histogram", "vllm:time_to_first_token_seconds_count", labels,
                    rows[math.inf])

    def dcgm(self, pod: Pod, e: Engine, life: list[int]) -> None:
        node = f"gpu-node-{_hash(pod.cluster, pod.name)[:3]}"
        gpu = self.gpus.setdefault((pod.cluster, node), 0)
        self.gpus[(pod.cluster, node)] = gpu + 1
        labels = {"cluster": pod.cluster, "gpu": str(gpu), "UUID": f"GPU-{_hash(node, gpu)}", "Hostname": node,
                  "modelName": "NVIDIA H100 80GB HBM3", "job": "dcgm", "instance": f"{node}:9400"}
        workload = {"namespace": pod.namespace, "pod": pod.name, "container": "vllm"}
        if pod.dcgm_mode == "pod":
            labels.update(workload)
        else:
            labels.update({"namespace": "gpu-operator", "pod": f"dcgm-exporter-{_hash(node)[:5]}", "container": "exporter"})
            labels.update({f"exported_{k}": v for k, v in workload.items()})
        start = {t: max(r.start for r in pod.runs if r.start <= t) for t in life}
        used = [(t, float(e.fb_used_mib(t, t - start[t]))) for t in life]
        hourly = set(sparse(pod.start, pod.end - 1, 3600))
        self.om.add("DCGM_FI_DEV_FB_USED", "gauge", "DCGM_FI_DEV_FB_USED", labels, used)
        self.om.add("DCGM_FI_DEV_FB_FREE", "gauge", "DCGM_FI_DEV_FB_FREE", labels, [(t, GPU_MIB - v) for t, v in used if t in hourly])

    def router(self, namespace: str, tag: str = "") -> None:
        labels = {"cluster": "gpu-east", "namespace": namespace, "pod": f"vllm-router{tag}-6d5f8", "container": "router",
                  "job": "vllm-router", "instance": "10.0.200.2:8001", "server": "http://10.0.1.2:8000"}
        self.om.add("vllm:num_requests_running", "gauge", "vllm:num_requests_running", labels,
                    [(t, 500.0) for t in sparse(T0, END, 3600)])

    def add(self, pod: Pod, engine: Engine | None = None) -> None:
        self.pods += 1
        self.cadvisor(pod)
        self.ksm(pod)
        if engine is not None:
            self.engine(pod, engine)


# ---------------------------------------------------------------------------------------------------------
# The workloads


def _load_then(load: float, serving: float, load_s: int = 360) -> Callable[[int, float], float]:
    """A container that holds `load` bytes in its first `load_s` seconds (weights staged in RAM), then `serving`."""
    return lambda t, age: load if 60 <= age < load_s else (6 * GIB if age < 60 else serving)


def rs_load(f: Fleet, ns: str = "rs-load", tag: str = "") -> None:
    """Peaks at 28 GiB while loading, idles at 12 GiB, under a 32 GiB limit (request 32 GiB). A rollout on day
    2 replaced the first pod (started before the window) with one whose load the window saw."""
    rollout = T0 + 2 * DAY + 30
    f.replicaset("gpu-east", ns, f"vllm-load{tag}-7c9d5b8f4", f"vllm-load{tag}", T0 - DAY)
    for name, start, end in ((f"vllm-load{tag}-7c9d5b8f4-q2x7k", T0 - DAY, rollout + 600), (f"vllm-load{tag}-7c9d5b8f4-m4n8p", rollout, END + 1)):
        pod = Pod("gpu-east", ns, name, [Run(start, end, _load_then(28 * GIB, 12 * GIB))], 32 * GIB, 32 * GIB,
                  owner=("ReplicaSet", f"vllm-load{tag}-7c9d5b8f4"), pod_cgroup=True)
        f.add(pod, Engine(config={"gpu_memory_utilization": "0.9"}))


def rs_oom(f: Fleet, ns: str = "rs-oom", tag: str = "") -> None:
    """Serves at 18 GiB under a 24 GiB limit; on day 10 it climbs to 23.9 GiB in 65 minutes and the kernel
    kills it (OOMKilled) 2.5 minutes after the last sample, 12.5 minutes before the next step; the next run
    loads at 20 GiB and serves at 18 GiB again."""
    climb = T0 + 10 * DAY
    kill = climb + 3900 + 150

    def first(t: int, age: float) -> float:
        return 18 * GIB if t < climb else 18 * GIB + (23.9 - 18) * GIB * min(1.0, (t - climb) / 3900)

    runs = [Run(T0 - DAY, kill, first, killed="OOMKilled"), Run(kill + 30, END + 1, _load_then(20 * GIB, 18 * GIB))]
    f.replicaset("gpu-east", ns, f"vllm-oom{tag}-5f6c7d8b9", f"vllm-oom{tag}", T0 - DAY)
    pod = Pod("gpu-east", ns, f"vllm-oom{tag}-5f6c7d8b9-z8w2c", runs, 24 * GIB, 20 * GIB, owner=("ReplicaSet", f"vllm-oom{tag}-5f6c7d8b9"),
              dcgm_mode="exported", pod_cgroup=True)
    f.add(pod, Engine(model="Qwen/Qwen2.5-14B-Instruct"))


def rs_context(f: Fleet, ns: str = "rs-context", tag: str = "") -> None:
    """A million requests whose prompt p99.9 is 7,500 tokens (0.2% fall between 5,000 and 10,000) and whose
    generation p99.9 is 350 (0.2% between 200 and 500), under max_model_len 131072 (vLLM 0.24+ says so:
    kv_cache_size_tokens / kv_cache_max_concurrency)."""
    f.replicaset("gpu-east", ns, f"vllm-context{tag}-6b7c8d9f5", f"vllm-context{tag}", T0 - DAY)
    pod = Pod("gpu-east", ns, f"vllm-context{tag}-6b7c8d9f5-k3j9x", [Run(T0 - DAY, END + 1, _load_then(16 * GIB, 14 * GIB))],
              20 * GIB, 16 * GIB, owner=("ReplicaSet", f"vllm-context{tag}-6b7c8d9f5"))
    engine = Engine(
        prompt_cdf={20: 0.01, 50: 0.03, 100: 0.08, 200: 0.15, 500: 0.30, 1000: 0.55, 2000: 0.80, 5000: 0.998, 10000: 1.0},
        generation_cdf={100: 0.5, 200: 0.998, 500: 1.0},
        max_model_len=131072,
        config={"kv_cache_size_tokens": "524288", "kv_cache_max_concurrency": "4.0"},
        model="mistralai/Mistral-Small-24B-Instruct-2501",
    )
    f.add(pod, engine)


def rs_batch(f: Fleet, ns: str = "rs-batch", tag: str = "") -> None:
    """A StatefulSet whose engine runs at most 12 requests at once (0 to 12 and back, every hour); the router
    in the same namespace re-exports vllm:num_requests_running at 500 without model_name."""
    pod = Pod("gpu-east", ns, f"batch-llm{tag}-0", [Run(T0 - DAY, END + 1, lambda t, age: 9 * GIB)], 16 * GIB, 10 * GIB,
              owner=("StatefulSet", f"batch-llm{tag}"))
    f.add(pod, Engine(running=lambda t: float(abs((t // STEP) % 24 - 12)), model="google/gemma-2-9b-it"))
    f.router(ns, tag)


def rs_kv(f: Fleet, ns: str = "rs-kv", tag: str = "") -> None:
    """A LeaderWorkerSet's leader: the KV cache runs at 97% to 100% by day, preempts 500 times, requests wait
    for capacity every other hour by day (a quarter of the time); --gpu-memory-utilization 0.85 with the framebuffer at 86%; prefix cache
    hits 2%; 40% of the memory the CUDA allocator holds unused (0.4 GiB) in inactive split blocks."""
    pod = Pod("gpu-east", ns, f"kv-lws{tag}-0", [Run(T0 - DAY, END + 1, lambda t, age: 20 * GIB)], 24 * GIB, 24 * GIB,
              owner=("StatefulSet", f"kv-lws{tag}"), lws=f"kv-lws{tag}", dcgm_mode="exported")
    engine = Engine(
        running=lambda t: 48.0 if day(t) else 4.0,
        kv=lambda t: (0.97 + 0.03 * ((t // STEP) % 2)) if day(t) else 0.3,
        capacity_waits=lambda t: 2.0 if day(t) and (t // 3600) % 2 == 0 else 0.0,
        preemptions=500 * 15 / 14,  # over 15 days of life: 500 in the window
        prefix_hit_rate=0.02,
        config={"gpu_memory_utilization": "0.85"},
        fb_used_mib=lambda t, age: 0.86 * GPU_MIB,
        fragmentation=0.4,
        dense=True,
        model="meta-llama/Llama-3.3-70B-Instruct",
    )
    f.add(pod, engine)


def rs_release(f: Fleet, ns: str = "rs-release", tag: str = "") -> None:
    """v0.30.0 from the first hour (load 20 GiB, serving 15 GiB), v0.31.0 from day 7 (load 26 GiB, serving
    19.5 GiB: +30% both); GPU memory unchanged. Only kube-state-metrics says when containers started."""
    switch = T0 + 7 * DAY
    for rs, name, image, start, end, load, serving in (
        (f"rel{tag}-58b9c6d7f", f"rel{tag}-58b9c6d7f-a1b2c", "docker.io/vllm/vllm-openai:v0.30.0", T0 + 3600 + 20, switch + 900, 20, 15),
        (f"rel{tag}-7d8e9f6c5", f"rel{tag}-7d8e9f6c5-d3e4f", "docker.io/vllm/vllm-openai:v0.31.0", switch + 20, END + 1, 26, 19.5),
    ):
        f.replicaset("gpu-east", ns, rs, f"rel{tag}", start)
        pod = Pod("gpu-east", ns, name, [Run(start, end, _load_then(load * GIB, serving * GIB))], 32 * GIB, 24 * GIB,
                  image=image, owner=("ReplicaSet", rs), cadvisor_start=False)
        f.add(pod, Engine(fb_used_mib=lambda t, age: 72000.0, model="Qwen/Qwen2.5-7B-Instruct"))


def rs_new(f: Fleet, ns: str = "rs-new", tag: str = "") -> None:
    """Started two days before the end; no kube-state-metrics series (cAdvisor's spec limit, 16 GiB, stands in)."""
    pod = Pod("gpu-east", ns, f"fresh-app{tag}-5d8f9c7b6d-x2k9p", [Run(END - 2 * DAY, END + 1, _load_then(13 * GIB, 10 * GIB))],
              16 * GIB, 12 * GIB, spec_limit=True)
    f.add(pod, Engine(model="microsoft/phi-4"))


def rs_ok(f: Fleet, ns: str = "rs-ok", tag: str = "") -> None:
    """Loads at 11 GiB and serves at 10 GiB with limit 12.75 GiB (11 x 1.15, rounded up to 256 MiB) and
    request 11.5 GiB (10 x 1.15): nothing to change, in both clusters. Its CUDA allocator's cache was just
    emptied: all 20 MiB it holds unused are split (a ratio of 1 that costs nothing, so no advice)."""
    for cluster, mode in (("gpu-east", "pod"), ("gpu-west", "exported")):
        f.replicaset(cluster, ns, f"steady{tag}-9f8e7d6c5", f"steady{tag}", T0)
        pod = Pod(cluster, ns, f"steady{tag}-9f8e7d6c5-p0q1r", [Run(T0 + 3 * 3600, END + 1, _load_then(11 * GIB, 10 * GIB))],
                  12.75 * GIB, 11.5 * GIB, owner=("ReplicaSet", f"steady{tag}-9f8e7d6c5"), dcgm_mode=mode)
        engine = Engine(
            running=lambda t: 6.0 if day(t) else 1.0,
            kv=lambda t: 0.7 if day(t) else 0.5,
            prompt_cdf={1000: 0.9, 2000: 0.99, 5000: 1.0},
            model="ibm-granite/granite-3.1-8b-instruct",
            fragmentation=1.0,
            split_gib=20 / 1024,
        )
        f.add(pod, engine)


def rs_liveness(f: Fleet, ns: str = "rs-liveness", tag: str = "") -> None:
    """Serves at 14 GiB under a 24 GiB limit; on day 6 a leak climbs to 22 GiB in 65 minutes and the liveness
    probe fails: the kubelet restarts the container (last terminated reason Error, not OOMKilled) 2.5 minutes
    after the last sample. The next run loads at 20 GiB. Limit: the climb, 22 x 1.15 = 25.3, up to 25.5 GiB."""
    leak = T0 + 6 * DAY
    restart = leak + 3900 + 150

    def first(t: int, age: float) -> float:
        return 14 * GIB if t < leak else 14 * GIB + 8 * GIB * min(1.0, (t - leak) / 3900)

    runs = [Run(T0 - DAY, restart, first, killed="Error"), Run(restart + 30, END + 1, _load_then(20 * GIB, 14 * GIB))]
    f.replicaset("gpu-east", ns, f"leaky{tag}-6c5d4b3a2", f"leaky{tag}", T0 - DAY)
    pod = Pod("gpu-east", ns, f"leaky{tag}-6c5d4b3a2-h7k2m", runs, 24 * GIB, 16 * GIB, owner=("ReplicaSet", f"leaky{tag}-6c5d4b3a2"))
    f.add(pod, Engine(model="deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"))


def rs_longrun(f: Fleet, ns: str = "rs-longrun", tag: str = "") -> None:
    """Started 20 days before the window (longer than the backend keeps), a 96 GiB limit, serves at 20 GiB;
    its model load (30 GiB) is in no data and no other pod runs its model: the limit must stay at 96 GiB."""
    start = T0 - 20 * DAY
    f.replicaset("gpu-east", ns, f"longrun{tag}-7b6c5d4e3", f"longrun{tag}", start)
    pod = Pod("gpu-east", ns, f"longrun{tag}-7b6c5d4e3-r5t6y", [Run(start, END + 1, _load_then(30 * GIB, 20 * GIB))],
              96 * GIB, 96 * GIB, owner=("ReplicaSet", f"longrun{tag}-7b6c5d4e3"))
    f.add(pod, Engine(model="Qwen/Qwen2.5-72B-Instruct"))


def rs_prewindow(f: Fleet, ns: str = "rs-prewindow", tag: str = "") -> None:
    """Started 3 days before the window, which the backend still holds: the load there (30 GiB) sizes the
    limit, 30 x 1.15 = 34.5 GiB, under the current 40 GiB; serves at 20 GiB."""
    start = T0 - 3 * DAY + 30
    f.replicaset("gpu-east", ns, f"warm{tag}-8c7d6e5f4", f"warm{tag}", start)
    pod = Pod("gpu-east", ns, f"warm{tag}-8c7d6e5f4-b2n3m", [Run(start, END + 1, _load_then(30 * GIB, 20 * GIB))],
              40 * GIB, 24 * GIB, owner=("ReplicaSet", f"warm{tag}-8c7d6e5f4"), since=start)
    f.add(pod, Engine(model="mistralai/Mixtral-8x7B-Instruct-v0.1"))


def rs_canary(f: Fleet, ns: str = "rs-canary", tag: str = "") -> None:
    """Two Deployments of one image and one model: chat started before the window (its load not in the
    data), chat-canary started on day 5 and loaded 26 GiB. chat's limit keeps 26 x 1.15 = 29.9, up to
    30 GiB, above its 18 GiB serving: 40 GiB -> 30 GiB."""
    model, image = "openai/gpt-oss-20b", "docker.io/vllm/vllm-openai:v0.33.1"
    for name, start, rs in ((f"chat{tag}", T0 - 5 * DAY, "5b4c3d2e1"), (f"chat-canary{tag}", T0 + 5 * DAY, "9a8b7c6d5")):
        f.replicaset("gpu-east", ns, f"{name}-{rs}", name, start)
        pod = Pod("gpu-east", ns, f"{name}-{rs}-w4e5r", [Run(start, END + 1, _load_then(26 * GIB, 18 * GIB))],
                  40 * GIB, 24 * GIB, image=image, owner=("ReplicaSet", f"{name}-{rs}"))
        f.add(pod, Engine(model=model))


def rs_scale(f: Fleet, ns: str = "rs-scale", tag: str = "") -> None:
    """Two replicas of a chat model whose queue per engine is 0 at night, 2 by day, 4 from 12:00 and 8 from
    13:00 to 14:00; the KV cache stays at 60%. From a queue of 4 up, 5% of first tokens take over 2.5 s (0.2%
    otherwise): the TTFT SLO (99% within 2.5 s) burns at 4 and more, every day. The history says: a queue
    target of 3 (80% of 4), the KV cache's default kept, and 6 replicas at the peak (2 x 8 / 3, rounded up)."""
    f.replicaset("gpu-east", ns, f"scale{tag}-6f5e4d3c2", f"scale{tag}", T0 - DAY)

    def queue(t: int) -> float:
        hour = (t // 3600) % 24
        return 8.0 if hour == 13 else 4.0 if hour == 12 else 2.0 if day(t) else 0.0

    for i in range(2):
        pod = Pod("gpu-east", ns, f"scale{tag}-6f5e4d3c2-{'ab'[i]}7k2m", [Run(T0 + 3600 * (1 + i), END + 1, _load_then(18 * GIB, 16 * GIB))],
                  24 * GIB, 20 * GIB, owner=("ReplicaSet", f"scale{tag}-6f5e4d3c2"))
        f.add(pod, Engine(running=lambda t: 4.0, waiting=queue, kv=lambda t: 0.6, dense=True, model="Qwen/Qwen3-8B",
                          ttft_slow=lambda t: 0.05 if queue(t) >= 4 else 0.002))


WORKLOADS = (rs_load, rs_oom, rs_context, rs_batch, rs_kv, rs_release, rs_new, rs_ok, rs_liveness, rs_longrun, rs_prewindow,
             rs_canary, rs_scale)


def write_fleet(path: Path, workloads: Iterable[Callable[[Fleet], None]] = WORKLOADS) -> int:
    """The fleet into `path`; the number of samples."""
    with tempfile.TemporaryDirectory(prefix="obspack-rightsize-fleet-") as scratch:
        fleet = Fleet(Path(scratch))
        for build in workloads:
            build(fleet)
        return fleet.om.write(path)


def write_without_vllm(path: Path) -> int:
    """A day of two nginx pods: cAdvisor and kube-state-metrics, and nothing from vLLM."""

    def nginx(fleet: Fleet) -> None:
        for i in range(2):
            pod = Pod("gpu-east", "web", f"nginx-6c7d8e9f5-{i}abcd", [Run(END - DAY, END + 1, lambda t, age: 200 * MIB)],
                      512 * MIB, 256 * MIB, image="docker.io/library/nginx:1.27", owner=("ReplicaSet", "nginx-6c7d8e9f5"))
            fleet.add(pod)

    return write_fleet(path, (nginx,))
