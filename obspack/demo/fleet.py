"""A synthetic, healthy vLLM-on-Kubernetes GPU fleet as OpenMetrics text, for backfilling a real Prometheus.

What it holds, per cluster (every cluster has the same namespace and pod names):
- vLLM engines of two generations: V1 (0.33 style: `engine` label, `kv_cache_usage_perc`,
  `prefix_cache_*` counters, `inter_token_latency`, no `_created` series), some with two data-parallel
  engines or tensor parallelism over two GPUs; and V0 (0.6 style: no `engine`, `gpu_cache_usage_perc`,
  the lifetime `gpu_prefix_cache_hit_rate` gauge, `time_per_output_token`, the older latency buckets).
- the API server's `http_requests_total{handler,method,status}` on V1 pods (none on V0, as in vLLM).
- production-stack router copies of engine gauges (a `server` label, no `model_name`).
- cAdvisor: the vLLM and exporter containers, the pod-level cgroup and the pause sandbox (containerd
  style in one cluster, dockershim `container="POD"` in the next), plus kubelet /metrics/resource copies.
- kube-state-metrics from two HA replicas (every series twice, differing in `instance`), with one KEDA-made
  HorizontalPodAutoscaler per cluster, namespace and model (`keda-hpa-<model>`), healthy and below its max.
- dcgm-exporter in both label modes, per node: workload in `pod=` (honorLabels: true) or in
  `exported_pod=` with `pod=` naming the exporter pod; `Hostname` in one cluster, `hostname` in the
  next; one idle GPU per node that no pod holds.
- the obspack exporter sidecar (derived KV and prefix-cache series, CUDA allocator series).
- vLLM features of 0.31 to 0.33 on some V1 pods (`Pod.features`, `FEATURES`): every 0.33 engine's sleep
  state, queue reasons and external prefix-cache counters; disaggregated prefill/decode over NIXL (a
  decode and a prefill pod) and Mooncake, KV offload (CPU spec, tiering spec, simple CPU offload),
  speculative decoding, LoRA adapters, admission rejections, and one engine put to sleep for the last
  third of the span (its counters stop, its gauges freeze). One V1 pod in twelve is a 0.11 engine (both
  inter-token latency names, no sleep state or queue reasons).
- the service around the pods, once per cluster (`_service_pods`): a prefill/decode pair of one model over
  NIXL (llm-d's role label and pod names; the decode pod's prompts arrive through the connector), and a
  LeaderWorkerSet group of two pods (the leader serves the metrics; the worker holds GPUs and host RAM,
  owned by a StatefulSet named after its leader). An endpoint picker per InferencePool (one per namespace
  and model) reports what it sees of the pods: llm-d router v0.10 names with their deprecated twins in
  even clusters, the scheduler v0.8's older names in odd ones, two replicas for each cluster's first pool.

`write_openmetrics(spec, path)` streams the file family by family (all samples of one family
together, each series in time order), which is what `promtool tsdb create-blocks-from openmetrics`
needs. It is sized by `FleetSpec` (pods per cluster, clusters, duration, step) so benchmarks can reuse it
for 10, 100 or 1000 pods. `write_openmetrics_by_source` writes the same samples as one file per source
and says when each is complete, so big fleets can be backfilled by several promtools while the rest is
being written (benchmarks/fleet_bench.py).
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, repeat
from pathlib import Path
from typing import IO

from obspack.catalogue import gateway as gw
from obspack.catalogue import vllm
from obspack.catalogue import vllm_features as vf

MIB = 1024 * 1024
GIB = 1024 * MIB

# (served model name, tensor-parallel size)
MODELS = (
    ("meta-llama/Llama-3.1-8B-Instruct", 1),
    ("Qwen/Qwen2.5-32B-Instruct", 2),
    ("mistralai/Mistral-7B-Instruct-v0.3", 1),
)
NAMESPACES = ("llm-serving", "llm-batch")
TEAMS = {"llm-serving": "search", "llm-batch": "research"}  # the `team` pod label of each namespace's pods
GPU_MODEL = "NVIDIA H100 80GB HBM3"
GPU_FB_MIB = 81559
GPUS_PER_NODE = 8

# The vLLM release each pod imitates (`Pod.release`): its histograms and their buckets come from the
# catalogue. Most V1 pods run the newest release, one in twelve an 0.11 engine.
RELEASES = {"0.33": vllm.V1.release, "0.11": "0.11.0", "0.6": vllm.V0.release}
# KV connector histograms of vLLM 0.33 (nixl/stats.py, mooncake/stats.py, offloading/metrics.py)
NIXL_TIME = vf.KV_TRANSFER_TIME_BOUNDS
NIXL_POST = (0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0)
NIXL_BYTES = vf.KV_TRANSFER_BYTES_BOUNDS
NIXL_DESCRIPTORS = (10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 200.0, 400.0, 1000.0, 2000.0, 4000.0, 10000.0, 20000.0, 50000.0)
OFFLOAD_SIZE = (1e6, 5e6, 1e7, 2e7, 4e7, 6e7, 8e7, 1e8, 1.5e8, 2e8)
LOOKUP_DELAY = (1e-05, 5e-05, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0)

Values = list[float]


@dataclass(frozen=True)
class FleetSpec:
    """How big the fleet is and which time span it covers."""

    pods: int = 6  # vLLM pods per cluster
    clusters: tuple[str, ...] = ("gpu-east", "gpu-west")
    duration_s: int = 3600
    step_s: int = 30
    end: int | None = None  # unix seconds of the last sample; default: a little before now
    cluster_label: str = "cluster"

    @cached_property
    def last(self) -> int:
        if self.end is not None:
            return self.end
        return (int(time.time()) - 60) // self.step_s * self.step_s

    @property
    def first(self) -> int:
        return self.last - self.duration_s

    @property
    def steps(self) -> int:
        return self.duration_s // self.step_s + 1


@dataclass(frozen=True)
class Pod:
    """One vLLM pod and everything the fleet says about it."""

    cluster: str
    cluster_index: int
    index: int
    namespace: str
    name: str
    model: str
    generation: str  # "v1" or "v0"
    engines: tuple[str, ...]  # data-parallel engine ids ("" for V0: no engine label)
    tp: int
    node: str
    node_index: int
    gpus: tuple[int, ...]  # GPU indices on the node
    dcgm_mode: str  # "pod" (honorLabels: true) or "exported" (honorLabels: false)
    ip: str
    uid: str
    rps: float  # mean requests per second
    phase: float
    release: str = "0.33"  # "0.33", "0.11" (V1) or "0.6" (V0)
    features: tuple[str, ...] = ()  # names from FEATURES
    role: str = ""  # "prefill" or "decode" on the disaggregated pair (llm-d's role label), else ""
    lws: tuple[str, int] | None = None  # (LeaderWorkerSet, worker index) on a multi-node group; 0 leads

    @property
    def worker(self) -> bool:
        """A LeaderWorkerSet worker: GPUs and host RAM, but no vLLM /metrics (only the leader serves them)."""
        return self.lws is not None and self.lws[1] > 0

    @property
    def pool(self) -> str:
        """The InferencePool that routes to this pod: one per namespace and model."""
        return self.model.split("/")[1].lower().replace("-instruct", "").replace(".", "-")

    @property
    def image(self) -> str:
        release = RELEASES[self.release]
        return f"docker.io/vllm/vllm-openai:v{release}" + (".post1" if self.generation == "v0" else "")

    def uses(self, *features: str) -> bool:
        return bool(set(features) & set(self.features))


@dataclass(frozen=True)
class FleetSummary:
    spec: FleetSpec
    pods: tuple[Pod, ...]  # the pods that serve vLLM's /metrics
    series: int
    samples: int
    workers: tuple[Pod, ...] = ()  # LeaderWorkerSet workers: GPUs and host RAM, no vLLM series

    @property
    def all_pods(self) -> tuple[Pod, ...]:
        return (*self.pods, *self.workers)

    @property
    def start(self) -> int:
        return self.spec.first

    @property
    def end(self) -> int:
        return self.spec.last


def _hash(*parts: object) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _suffix(*parts: object) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    n = _hash(*parts)
    out = []
    for _ in range(5):
        n, r = divmod(n, len(alphabet))
        out.append(alphabet[r])
    return "".join(out)


# The features of the V1 0.33 pods, by pod index modulo 12 (indexes 3, 7 and 11 are V0, 2 is vLLM 0.11).
FEATURES: dict[int, tuple[str, ...]] = {
    0: ("nixl-decode", "spec_decode"),
    1: ("offload-cpu", "admission"),
    4: ("nixl-prefill", "lora", "offload-simple"),
    5: ("asleep", "mooncake-decode", "spec_decode"),
    6: ("mooncake-decode", "spec_decode"),
    8: ("offload-simple",),
    9: ("lora", "admission"),
    10: ("nixl-decode", "offload-tiering"),
}


def fleet_pods(spec: FleetSpec) -> list[Pod]:
    """The pods of every cluster: the same names everywhere, different label modes and versions."""
    pods = []
    for ci, cluster in enumerate(spec.clusters):
        gpu_cursor: dict[int, int] = {}
        node_index = 0
        for i in range(spec.pods):
            model, tp = MODELS[i % len(MODELS)]
            generation = "v0" if i % 4 == 3 else "v1"
            engines = (
                ("0", "1") if generation == "v1" and i % 4 == 1 else ("0",) if generation == "v1" else ("",)
            )
            need = tp * len(engines)
            if gpu_cursor.get(node_index, 0) + need > GPUS_PER_NODE - 1:  # keep one idle GPU per node
                node_index += 1
            first = gpu_cursor.get(node_index, 0)
            gpu_cursor[node_index] = first + need
            slug = model.split("/")[1].lower().replace("-instruct", "").replace(".", "-")
            pods.append(
                Pod(
                    cluster=cluster,
                    cluster_index=ci,
                    index=i,
                    namespace=NAMESPACES[i % len(NAMESPACES)],
                    name=f"vllm-{slug}-{_suffix('rs', i)}-{_suffix('pod', i)}",
                    model=model,
                    generation=generation,
                    engines=engines,
                    tp=tp,
                    node=f"gpu-node-{node_index:03d}",
                    node_index=node_index,
                    gpus=tuple(range(first, first + need)),
                    dcgm_mode="pod" if (node_index + ci) % 2 == 0 else "exported",
                    ip=f"10.{ci}.{i // 250}.{i % 250 + 2}",
                    uid=f"{_hash('uid', ci, i):08x}-0000-4000-8000-{_hash('uid2', ci, i):012x}"[:36],
                    rps=0.6 + (_hash("rps", i) % 100) / 40,
                    phase=(_hash("phase", ci, i) % 628) / 100,
                    release="0.6" if generation == "v0" else "0.11" if i % 12 == 2 else "0.33",
                    features=FEATURES.get(i % 12, ()) if generation == "v1" else (),
                )
            )
        pods.extend(_service_pods(spec, ci, cluster, node_index + 1))
    return pods


# The parts of a service beyond single pods, once per cluster on nodes of their own: a disaggregated
# prefill/decode pair of one model over NIXL (llm-d's role label and pod names), and a LeaderWorkerSet that
# spreads one engine over two pods (pipeline parallel over two nodes, four GPUs each).
PD_MODEL = MODELS[0][0]
LWS_MODEL = "meta-llama/Llama-3.1-70B-Instruct"
LWS_NAME = "vllm-llama-3-1-70b"
LWS_TP = 4


def _service_pods(spec: FleetSpec, ci: int, cluster: str, node_index: int) -> list[Pod]:
    def pod(i: int, name: str, model: str, node: int, gpus: int, **more: object) -> Pod:
        index = spec.pods + i
        return Pod(
            cluster=cluster, cluster_index=ci, index=index, namespace=NAMESPACES[0], name=name, model=model,
            generation="v1", engines=("0",), tp=gpus, node=f"gpu-node-{node:03d}", node_index=node,
            gpus=tuple(range(gpus * (i % 2), gpus * (i % 2 + 1))) if node == node_index else tuple(range(gpus)),
            dcgm_mode="pod" if (node + ci) % 2 == 0 else "exported",
            ip=f"10.{ci}.{index // 250}.{index % 250 + 2}",
            uid=f"{_hash('uid', ci, index):08x}-0000-4000-8000-{_hash('uid2', ci, index):012x}"[:36],
            rps=6.0 if "role" in more else 1.2, phase=(_hash("phase", ci, index) % 628) / 100,
            **more,  # type: ignore[arg-type]
        )

    slug = PD_MODEL.split("/")[1].lower().replace("-instruct", "").replace(".", "-")
    return [
        # both halves of the pair share one node (one GPU each): the KV moves over NVLink. The pair is busy
        # enough that its prefill pod always has a prompt in flight (each takes a quarter of a second).
        pod(0, f"ms-{slug}-prefill-{_suffix('pd-rs', 0)}-{_suffix('pd', 0)}", PD_MODEL, node_index, 1,
            features=("nixl-prefill",), role="prefill"),
        pod(1, f"ms-{slug}-decode-{_suffix('pd-rs', 1)}-{_suffix('pd', 1)}", PD_MODEL, node_index, 1,
            features=("nixl-decode",), role="decode"),
        pod(2, f"{LWS_NAME}-0", LWS_MODEL, node_index + 1, LWS_TP, lws=(LWS_NAME, 0)),
        pod(3, f"{LWS_NAME}-0-1", LWS_MODEL, node_index + 2, LWS_TP, lws=(LWS_NAME, 1)),
    ]


# ---------------------------------------------------------------------------------------------------
# Value profiles (deterministic, cheap: a few list comprehensions per pod)


def _lognormal_cdf(x: float, median: float, sigma: float) -> float:
    return 0.5 * (1 + math.erf((math.log(x) - math.log(median)) / (sigma * math.sqrt(2))))


class Profile:
    """Per-pod, per-engine time series that the families are built from."""

    def __init__(self, pod: Pod, spec: FleetSpec):
        n, step = spec.steps, spec.step_s
        share = 1 / len(pod.engines)
        self.rps = [
            pod.rps * share * (1 + 0.3 * math.sin(2 * math.pi * k * step / 1800 + pod.phase))
            for k in range(n)
        ]
        self.e2e_median = 3.0 + (pod.index % 3)
        if pod.role == "prefill":  # one token per request: the decode pod generates the rest
            self.e2e_median = 0.25
        self.running = [round(r * self.e2e_median * 1.2) for r in self.rps]
        self.waiting = [1 if math.sin(k / 7 + pod.phase) > 0.97 else 0 for k in range(n)]
        self.kv = [min(0.8, 0.2 + 0.04 * r) for r in self.running]
        # An engine put to sleep serves nothing: no requests, and the gauges it no longer updates freeze.
        self.asleep_from = n - n // 3 if pod.uses("asleep") else n
        for series in (self.running, self.waiting, self.kv):
            series[self.asleep_from :] = series[self.asleep_from - 1 : self.asleep_from] * (n - self.asleep_from)
        self.rps[self.asleep_from :] = [0.0] * (n - self.asleep_from)
        requests = 0.0
        self.requests = []
        for r in self.rps:
            requests += r * step
            self.requests.append(float(int(requests)))
        self.prompt = [float(int(x * 612)) for x in self.requests]
        self.generation = [float(int(x * 245)) for x in self.requests]
        if pod.role == "prefill":
            self.generation = list(self.requests)
        self.prefix_queries = self.prompt
        # A decode pod's prompts arrive as KV from the prefill pod (the connector's hits), not from its own cache.
        self.prefix_hits = [float(int(x * (0.01 if pod.role == "decode" else 0.46))) for x in self.prompt]
        self.num_gpu_blocks = 27000 if pod.tp == 1 else 61000
        self.block_size = 16


def _fmt(v: float) -> str:
    return f"{v:.6g}" if v != int(v) or abs(v) >= 1e15 else str(int(v))


_fmt_6g = "{:.6g}".format


def _fmt_all(values: Values) -> list[str]:
    """`_fmt` over a whole series, with the loop in C where every value takes the same branch."""
    try:
        if all(map(float.is_integer, values)):
            if max(map(abs, values), default=0.0) < 1e15:
                return list(map(str, map(int, values)))
        elif not any(map(float.is_integer, values)):
            return list(map(_fmt_6g, values))
    except TypeError:  # an int among the floats: take the general path
        pass
    return list(map(_fmt, values))


def _hist(
    counts: Values, bounds: Iterable[float], median: float, sigma: float
) -> Iterator[tuple[str, str, Values]]:
    """Cumulative histogram series (suffix, le label, values) from a request count profile."""
    for le in bounds:
        p = _lognormal_cdf(le, median, sigma)
        yield (
            "_bucket",
            f'le="{le:g}"' if le != int(le) else f'le="{le:.1f}"',
            [float(int(c * p)) for c in counts],
        )
    yield "_bucket", 'le="+Inf"', counts
    yield "_count", "", counts
    mean = median * math.exp(sigma * sigma / 2)
    yield "_sum", "", [c * mean for c in counts]


# ---------------------------------------------------------------------------------------------------
# Writing


@dataclass
class _Writer:
    out: IO[str]
    stamps: list[str]
    count: int = 0
    samples: int = 0
    families: set[str] = field(default_factory=set)
    # The last few value lists and their text: families pass the same list for many series (every
    # engine of a pod, a histogram's +Inf bucket and _count).
    _formatted: dict[int, tuple[Values, list[str]]] = field(default_factory=dict, init=False, repr=False)
    _tails: list[str] = field(default_factory=list, init=False, repr=False)  # " <timestamp>\n" per step

    def __post_init__(self) -> None:
        self._tails = [f" {t}\n" for t in self.stamps]

    def family(self, name: str, kind: str, help_text: str) -> None:
        if name in self.families:
            raise ValueError(f"family {name} written twice: OpenMetrics needs each family in one block")
        self.families.add(name)
        self.out.write(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")

    def series(self, name: str, labels: str, values: Values | float) -> None:
        n = len(self.stamps)
        prefix = f"{name}{{{labels}}} "
        # name{labels} value timestamp, joined in C: prefix, value and " timestamp\n" per sample.
        text = [_fmt(values)] * n if not isinstance(values, list) else self._text(values)
        self.out.write("".join(chain.from_iterable(zip(repeat(prefix, n), text, self._tails))))
        self.count += 1
        self.samples += n

    def sparse(self, name: str, labels: str, values: Values, first: int) -> None:
        """A series that appears at step `first` (a label combination that did not exist before)."""
        text = _fmt_all(values)
        self.out.write("".join(f"{name}{{{labels}}} {text[k]}{self._tails[k]}" for k in range(first, len(values))))
        self.count += 1
        self.samples += len(values) - first

    def _text(self, values: Values) -> list[str]:
        cached = self._formatted.get(id(values))
        if cached is not None and cached[0] is values:
            return cached[1]
        if len(self._formatted) >= 16:
            self._formatted.clear()
        text = _fmt_all(values)
        self._formatted[id(values)] = (values, text)  # holding `values` keeps its id from being reused
        return text


def _labels(**labels: str) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items() if v is not None)


class _Fleet:
    def __init__(self, spec: FleetSpec):
        self.spec = spec
        self.all_pods = fleet_pods(spec)
        self.pods = [p for p in self.all_pods if not p.worker]  # the pods that serve vLLM's /metrics
        self.workers = tuple(p for p in self.all_pods if p.worker)
        self.profiles = {(p.cluster, p.name): Profile(p, spec) for p in self.all_pods}
        self.cl = spec.cluster_label

    def profile(self, pod: Pod) -> Profile:
        return self.profiles[(pod.cluster, pod.name)]

    # -- label sets ------------------------------------------------------------------------------

    def target(self, pod: Pod, container: str, job: str, port: int) -> dict[str, str]:
        return {
            self.cl: pod.cluster,
            "namespace": pod.namespace,
            "pod": pod.name,
            "container": container,
            "endpoint": "http",
            "instance": f"{pod.ip}:{port}",
            "job": job,
            "service": pod.name.rsplit("-", 2)[0],
        }

    def engine(self, pod: Pod, engine: str, **extra: str) -> str:
        labels = self.target(pod, "vllm", "vllm", 8000)
        if engine:
            labels["engine"] = engine
        labels["model_name"] = pod.model
        labels.update(extra)
        return _labels(**labels)

    # -- vLLM ------------------------------------------------------------------------------------

    def vllm_gauges(self, w: _Writer) -> None:
        def gauge(
            name: str,
            help_text: str,
            values: Callable[[Profile, Pod], Values | float],
            gens: str = "v0 v1",
            router: bool = False,
        ) -> None:
            w.family(name, "gauge", help_text)
            for pod in self.pods:
                if pod.generation in gens:
                    for e in pod.engines:
                        w.series(name, self.engine(pod, e), values(self.profile(pod), pod))
                if router:
                    w.series(name, self.router(pod), values(self.profile(pod), pod))

        gauge(
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
            lambda p, _: p.running,
            router=True,
        )
        gauge(
            "vllm:num_requests_waiting",
            "Number of requests waiting to be processed.",
            lambda p, _: p.waiting,
            router=True,
        )
        gauge(
            "vllm:kv_cache_usage_perc",
            "KV-cache usage. 1 means 100 percent usage.",
            lambda p, _: p.kv,
            "v1",
            router=True,
        )
        gauge(
            "vllm:gpu_cache_usage_perc",
            "GPU KV-cache usage. 1 means 100 percent usage.",
            lambda p, _: p.kv,
            "v0",
        )
        gauge("vllm:cpu_cache_usage_perc", "CPU KV-cache usage.", lambda p, _: 0.0, "v0")
        gauge("vllm:num_requests_swapped", "Number of requests swapped to CPU.", lambda p, _: 0.0, "v0")
        gauge("vllm:gpu_prefix_cache_hit_rate", "GPU prefix cache block hit rate.", lambda p, _: 0.41, "v0")

        w.family("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig")
        for pod in self.pods:
            p = self.profile(pod)
            for e in pod.engines:
                labels = self.target(pod, "vllm", "vllm", 8000)
                labels.update(
                    block_size=str(p.block_size),
                    cache_dtype="auto",
                    enable_prefix_caching="True",
                    gpu_memory_utilization="0.9",
                    is_attention_free="False",
                    num_cpu_blocks="2048",
                    num_gpu_blocks=str(p.num_gpu_blocks),
                    num_gpu_blocks_override="None",
                    sliding_window="None",
                )
                if e:
                    labels.update(engine=e, kv_cache_memory_bytes="None", prefix_caching_hash_algo="sha256")
                w.series("vllm:cache_config_info", _labels(**labels), 1.0)

    def vllm_counters(self, w: _Writer) -> None:
        def counter(
            name: str, help_text: str, values: Callable[[Profile], Values], gens: str = "v0 v1"
        ) -> None:
            w.family(name, "counter", help_text)
            for pod in self.pods:
                if pod.generation in gens:
                    for e in pod.engines:
                        w.series(f"{name}_total", self.engine(pod, e), values(self.profile(pod)))

        zero = [0.0] * self.spec.steps
        counter("vllm:prompt_tokens", "Number of prefill tokens processed.", lambda p: p.prompt)
        counter("vllm:generation_tokens", "Number of generation tokens processed.", lambda p: p.generation)
        counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", lambda p: zero)
        counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of tokens.",
            lambda p: p.prefix_queries,
            "v1",
        )
        counter(
            "vllm:prefix_cache_hits", "Prefix cache hits, in terms of tokens.", lambda p: p.prefix_hits, "v1"
        )

        w.family("vllm:request_success", "counter", "Count of successfully processed requests.")
        for pod in self.pods:
            p = self.profile(pod)
            reasons = {"stop": 0.9, "length": 0.1}
            if pod.generation == "v1":  # V1 pre-creates every reason at zero
                reasons.update(abort=0.0, error=0.0, repetition=0.0)
            for e in pod.engines:
                for reason, share in reasons.items():
                    values = [float(int(x * share)) for x in p.requests]
                    w.series(
                        "vllm:request_success_total", self.engine(pod, e, finished_reason=reason), values
                    )

        # The API server's counter (prometheus-fastapi-instrumentator, vLLM 0.8.3+): per pod, no model_name.
        w.family("http_requests", "counter", "Total number of requests by method, status and handler.")
        for pod in self.pods:
            if pod.generation == "v1":
                for status, share in (("2xx", 0.9985), ("4xx", 0.001), ("5xx", 0.0005)):
                    labels = _labels(
                        **self.target(pod, "vllm", "vllm", 8000),
                        handler="/v1/chat/completions",
                        method="POST",
                        status=status,
                    )
                    values = [float(int(x * share)) for x in self.profile(pod).requests]
                    first = next((k for k, v in enumerate(values) if v > 0), None)
                    if first is not None:  # a status's series appears at its first request (none on a healthy pod)
                        w.sparse("http_requests_total", labels, values, first)

    def vllm_histograms(self, w: _Writer) -> None:
        def histogram(name: str, help_text: str, shape: Callable[[Pod, Profile], tuple[float, float]]) -> None:
            """`shape`: the median and log-normal sigma of a pod's observations."""
            w.family(name, "histogram", help_text)
            for pod in self.pods:
                bounds = vllm.bounds_in(name, RELEASES[pod.release])
                if bounds is None:  # not in this pod's release
                    continue
                p = self.profile(pod)
                median, sigma = shape(pod, p)
                for e in pod.engines:
                    for suffix, le, values in _hist(p.requests, bounds, median, sigma):
                        labels = self.engine(pod, e) + (f",{le}" if le else "")
                        w.series(name + suffix, labels, values)

        histogram(
            vllm.TTFT,
            "Histogram of time to first token in seconds.",
            lambda pod, p: (0.18 + 0.05 * (pod.index % 3), 0.8),
        )
        histogram(vllm.ITL, "Histogram of inter-token latency in seconds.", lambda pod, p: (0.025, 0.5))
        histogram(vllm.TPOT, "Histogram of time per output token in seconds.", lambda pod, p: (0.03, 0.5))
        histogram(
            vllm.E2E, "Histogram of end to end request latency in seconds.", lambda pod, p: (p.e2e_median, 0.6)
        )
        histogram(
            vllm.QUEUE, "Histogram of time spent in WAITING phase for request.", lambda pod, p: (0.02, 1.0)
        )

    def vllm_features(self, w: _Writer) -> None:
        """The series of vLLM 0.31-0.33 features (`Pod.features`), in the shapes the wheels define them."""
        n = self.spec.steps
        zero = [0.0] * n
        recent = [pod for pod in self.pods if pod.release == "0.33"]

        def family(name: str, kind: str, help_text: str, pods: Iterable[Pod], per_engine: bool,
                   values: Callable[[Pod, Profile], Iterable[tuple[dict[str, str], Values | float]]]) -> None:
            w.family(name.removesuffix("_total"), kind, help_text)
            for pod in pods:
                for engine in pod.engines if per_engine else ("",):
                    for extra, series in values(pod, self.profile(pod)):
                        w.series(name, self.engine(pod, engine, **extra), series)

        def histogram(name: str, help_text: str, pods: Iterable[Pod], bounds: tuple[float, ...],
                      median: float, counts: Callable[[Profile], Values], **extra: str) -> None:
            w.family(name, "histogram", help_text)
            for pod in pods:
                p = self.profile(pod)
                for engine in pod.engines:
                    for suffix, le, values in _hist(counts(p), bounds, median, 0.7):
                        labels = self.engine(pod, engine, **extra) + (f",{le}" if le else "")
                        w.series(name + suffix, labels, values)

        def asleep(p: Profile, awake: bool) -> Values:
            return [float((k < p.asleep_from) == awake) for k in range(n)]

        family("vllm:engine_sleep_state", "gauge", "Engine sleep state: 1 for the current state.", recent, True,
               lambda pod, p: [({"sleep_state": "awake"}, asleep(p, True)),
                               ({"sleep_state": "weights_offloaded"}, asleep(p, False)),
                               ({"sleep_state": "discard_all"}, 0.0)])  # fmt: skip

        def reasons(pod: Pod, p: Profile) -> list[tuple[dict[str, str], Values | float]]:
            deferred = pod.uses("nixl-decode", "mooncake-decode")  # waiting for KV from a prefill pod
            return [({"reason": "capacity"}, zero if deferred else p.waiting),
                    ({"reason": "deferred"}, p.waiting if deferred else zero)]  # fmt: skip

        family("vllm:num_requests_waiting_by_reason", "gauge", "Waiting requests by reason.", recent, True, reasons)
        connected = ("nixl-decode", "mooncake-decode", "offload-cpu", "offload-tiering", "offload-simple")
        for name, share, pair in (("queries", 0.5, 1.0), ("hits", 0.2, 0.97)):
            family(f"vllm:external_prefix_cache_{name}_total", "counter", f"External prefix cache {name} (tokens).",
                   recent, True,
                   lambda pod, p, sh=share, pd=pair: [({}, [float(int(x * (pd if pod.role == "decode" else sh)))
                                                           for x in p.prompt] if pod.uses(*connected) else zero)])  # fmt: skip
        admission = [pod for pod in recent if pod.uses("admission")]
        family("vllm:admission_rejections_total", "counter", "Requests rejected at admission.", admission, False,
               lambda pod, p: [({"reason": "max_num_queued_reqs"}, [float(k // 4) for k in range(n)]),
                               ({"reason": "max_num_queued_tokens"}, zero)])  # fmt: skip

        # Disaggregated prefill/decode: NIXL on both roles, Mooncake on its decode pods
        for connector, failures in (
            ("nixl", ("failed_transfers", "failed_notifications", "kv_expired_reqs", "notifications_after_expiry")),
            ("mooncake", ("failed_transfers", "failed_recvs", "kv_expired_reqs")),
        ):
            pods = [pod for pod in recent if pod.uses(f"{connector}-decode", f"{connector}-prefill")]
            decode = [pod for pod in pods if pod.uses(f"{connector}-decode")]
            for failure in failures:
                # prefill pods see a request's blocks expire now and then
                family(f"vllm:{connector}_num_{failure}_total", "counter", f"{connector} KV transfer {failure}.", pods,
                       True, lambda pod, p, f=failure: [({}, [float(k // 20) for k in range(n)]
                                                          if f == "kv_expired_reqs" and pod.uses("nixl-prefill") else zero)])  # fmt: skip
            histogram(f"vllm:{connector}_xfer_time_seconds", "KV transfer time.", decode, NIXL_TIME, 0.02, lambda p: p.requests)
            histogram(f"vllm:{connector}_bytes_transferred", "Bytes per KV transfer.", decode, NIXL_BYTES, 2e7,
                      lambda p: p.requests)
            histogram(f"vllm:{connector}_num_descriptors", "Descriptors per KV transfer.", decode, NIXL_DESCRIPTORS, 400,
                      lambda p: p.requests)
        nixl_decode = [pod for pod in recent if pod.uses("nixl-decode")]
        histogram("vllm:nixl_post_time_seconds", "NIXL post time.", nixl_decode, NIXL_POST, 0.002, lambda p: p.requests)
        family("vllm:num_requests_kv_fetch_by_stage", "gauge", "Requests fetching KV, by stage.",
               [pod for pod in recent if pod.uses("nixl-decode", "mooncake-decode")], True,
               lambda pod, p: [({"stage": "waiting_to_start"}, p.waiting), ({"stage": "in_progress"}, p.waiting),
                               ({"stage": "completed_waiting"}, 0.0)])  # fmt: skip

        # KV offload: the OffloadingConnector (CPU or tiering spec) and the simple CPU offload connector
        offload = [pod for pod in recent if pod.uses("offload-cpu", "offload-tiering")]
        block = 16 * 128 * 1024  # bytes of one offloaded block (any size will do)

        def moved(p: Profile, direction: str) -> Values:
            return [float(int(x * (0.3 if direction == "store" else 0.1)) * block) for x in p.prompt]

        for direction in ("store", "load"):
            family(f"vllm:kv_offload_{direction}_bytes_total", "counter", f"KV offload {direction} bytes.", offload, True,
                   lambda pod, p, d=direction: [({}, moved(p, d))])  # fmt: skip
            family(f"vllm:kv_offload_{direction}_time_total", "counter", f"KV offload {direction} seconds.", offload, True,
                   lambda pod, p, d=direction: [({}, [x / 2e10 for x in moved(p, d)])])  # fmt: skip
            histogram(f"vllm:kv_offload_{direction}_size", f"KV offload {direction} sizes.", offload, OFFLOAD_SIZE, 2e7,
                      lambda p: p.requests)
        family("vllm:kv_offload_total_bytes_total", "counter", "KV offload bytes (deprecated).", offload, True,
               lambda pod, p: [({"transfer_type": "GPU_to_CPU"}, moved(p, "store")),
                               ({"transfer_type": "CPU_to_GPU"}, moved(p, "load"))])  # fmt: skip
        w.family("vllm:kv_offload_size", "histogram", "KV offload sizes (deprecated).")
        for pod in offload:
            for engine in pod.engines:
                for transfer in ("GPU_to_CPU", "CPU_to_GPU"):
                    for suffix, le, values in _hist(self.profile(pod).requests, OFFLOAD_SIZE, 2e7, 0.7):
                        labels = self.engine(pod, engine, transfer_type=transfer) + (f",{le}" if le else "")
                        w.series("vllm:kv_offload_size" + suffix, labels, values)
        histogram("vllm:kv_offload_lookup_sync_delay_seconds", "KV offload lookup delay.", offload, LOOKUP_DELAY, 2e-4,
                  lambda p: p.requests)
        family("vllm:kv_offload_allocation_failure_total", "counter", "KV offload allocation failures.", offload, True,
               lambda pod, p: [({}, zero)])
        cpu = [pod for pod in offload if pod.uses("offload-cpu")]
        for name in ("usage", "read_usage", "write_usage"):
            family(f"vllm:kv_offload_cpu_cache_{name}_perc", "gauge", f"KV offload CPU cache {name}.", cpu, True,
                   lambda pod, p: [({}, [min(0.95, 0.3 + kv) for kv in p.kv])])  # fmt: skip
        tiering = [pod for pod in offload if pod.uses("offload-tiering")]
        for name in ("write", "read"):
            family(f"vllm:kv_offload_tiering_primary_{name}_usage_perc", "gauge", f"Tiering primary {name} usage.",
                   tiering, True, lambda pod, p: [({"tier": "0:CPU"}, [min(0.95, 0.4 + kv) for kv in p.kv])])  # fmt: skip
        family("vllm:kv_offload_tiering_promotion_allocation_failures_total", "counter", "Failed promotions.",
               tiering, True, lambda pod, p: [({}, zero)])
        simple = [pod for pod in recent if pod.uses("offload-simple")]
        family("vllm:simple_kv_offload_used_blocks", "gauge", "Blocks in the CPU offload cache.", simple, True,
               lambda pod, p: [({}, [float(int(20000 * (0.3 + kv))) for kv in p.kv])])  # fmt: skip
        family("vllm:simple_kv_offload_info", "gauge", "Simple CPU offload settings.", simple, True,
               lambda pod, p: [({"backend": "cpu", "page_cache": "False", "lazy_offload": "True",
                                 "capacity_blocks": "32768"}, 1.0)])  # fmt: skip
        family("vllm:simple_kv_offload_load_blocks_total", "counter", "Blocks loaded back.", simple, True,
               lambda pod, p: [({}, [float(int(x * 0.02)) for x in p.prompt])])  # fmt: skip

        # Speculative decoding: three draft positions
        spec = [pod for pod in recent if pod.uses("spec_decode")]
        drafted = {"drafts": 1.0, "draft_tokens": 3.0, "accepted_tokens": 1.9}
        for name, per_token in drafted.items():
            family(f"vllm:spec_decode_num_{name}_total", "counter", f"Speculative decoding {name}.", spec, True,
                   lambda pod, p, k=per_token: [({}, [float(int(x * k / 3)) for x in p.generation])])  # fmt: skip
        family("vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter", "Accepted draft tokens by position.",
               spec, True, lambda pod, p: [({"position": str(i)}, [float(int(x * a / 3)) for x in p.generation])
                                           for i, a in enumerate((0.8, 0.65, 0.45))])  # fmt: skip

        # LoRA: one series per adapter combination, valued with the time of its last update (no model_name)
        w.family("vllm:lora_requests_info", "gauge", "Running and waiting LoRA adapters.")
        stamps = [float(t) for t in w.stamps]
        half = n // 2
        for pod in (pod for pod in recent if pod.uses("lora")):
            labels = self.target(pod, "vllm", "vllm", 8000)
            combos = (
                ({"running_lora_adapters": "sql", "waiting_lora_adapters": ""}, 0, half),
                ({"running_lora_adapters": "sql,chat", "waiting_lora_adapters": "summarize"}, half, n),
            )
            for adapters, first, last in combos:
                values = [stamps[min(k, last - 1)] for k in range(n)]
                w.sparse("vllm:lora_requests_info", _labels(**labels, max_lora="4", **adapters), values, first)

    def router(self, pod: Pod) -> str:
        """production-stack's router re-exports engine gauges under the same names: `server`, no model_name."""
        return _labels(
            **{
                self.cl: pod.cluster,
                "container": "router",
                "endpoint": "router",
                "instance": f"10.{pod.cluster_index}.200.2:8001",
                "job": "vllm-router",
                "namespace": NAMESPACES[0],
                "pod": f"vllm-router-{_suffix('router', pod.cluster)}",
                "server": f"http://{pod.ip}:8000",
                "service": "vllm-router",
            }
        )

    # -- Kubernetes --------------------------------------------------------------------------------

    def cadvisor(self, w: _Writer) -> None:
        def kubelet(pod: Pod, path: str = "/metrics/cadvisor") -> dict[str, str]:
            return {
                self.cl: pod.cluster,
                "endpoint": "https-metrics",
                "instance": f"{pod.node}:10250",
                "job": "kubelet",
                "metrics_path": path,
                "namespace": pod.namespace,
                "node": pod.node,
                "pod": pod.name,
                "service": "kubelet",
            }

        def cgroups(pod: Pod) -> Iterator[tuple[dict[str, str], str]]:
            base = f"/kubepods/burstable/pod{pod.uid}"
            yield (
                {
                    "container": "vllm",
                    "id": f"{base}/{_hash('c', pod.uid):08x}",
                    "image": pod.image,
                    "name": f"{_hash('c', pod.uid):08x}",
                },
                "vllm",
            )
            if pod.worker:  # no vLLM /metrics for an exporter sidecar to read
                yield {"container": "", "id": base, "image": "", "name": ""}, "pod"
                return
            yield (
                {
                    "container": "obspack-exporter",
                    "id": f"{base}/{_hash('e', pod.uid):08x}",
                    "image": "ghcr.io/obspack/obspack:0.1.0",
                    "name": f"{_hash('e', pod.uid):08x}",
                },
                "exporter",
            )
            yield {"container": "", "id": base, "image": "", "name": ""}, "pod"
            if pod.cluster_index % 2 == 0:  # containerd: the sandbox has no container name
                yield (
                    {
                        "container": "",
                        "id": f"{base}/{_hash('p', pod.uid):08x}",
                        "image": "registry.k8s.io/pause:3.9",
                        "name": f"{_hash('p', pod.uid):08x}",
                    },
                    "pause",
                )
            else:  # dockershim
                yield (
                    {
                        "container": "POD",
                        "id": f"{base}/{_hash('p', pod.uid):08x}",
                        "image": "k8s.gcr.io/pause:3.5",
                        "name": f"k8s_POD_{pod.name}",
                    },
                    "pause",
                )

        def working_set(pod: Pod, role: str) -> Values:
            p = self.profile(pod)
            if role == "pause":
                return [float(512 * 1024)] * self.spec.steps
            exporter = [float(96 * MIB + (k % 10) * MIB) for k in range(self.spec.steps)]
            vllm = [float(int((30 + 0.15 * r) * GIB)) for r in p.running]
            if role == "exporter":
                return exporter
            if role == "vllm":
                return vllm
            return [a + b for a, b in zip(vllm, exporter)]

        limits = {"vllm": 64.0 * GIB, "exporter": 256.0 * MIB, "pod": 64.0 * GIB + 256 * MIB, "pause": 0.0}
        w.family(
            "container_memory_working_set_bytes", "gauge", "Current working set of the container in bytes"
        )
        for pod in self.all_pods:
            for extra, role in cgroups(pod):
                w.series(
                    "container_memory_working_set_bytes",
                    _labels(**kubelet(pod), **extra),
                    working_set(pod, role),
                )
            if pod.cluster_index % 2 == 0:  # kubelet /metrics/resource repeats it without image or id
                w.series(
                    "container_memory_working_set_bytes",
                    _labels(**kubelet(pod, "/metrics/resource"), container="vllm"),
                    working_set(pod, "vllm"),
                )
        w.family("container_spec_memory_limit_bytes", "gauge", "Memory limit for the container.")
        for pod in self.all_pods:
            for extra, role in cgroups(pod):
                w.series("container_spec_memory_limit_bytes", _labels(**kubelet(pod), **extra), limits[role])

    def kube_state_metrics(self, w: _Writer) -> None:
        replicas = ("10.96.0.20:8080", "10.96.0.21:8080")  # HA: every series twice

        def ksm(pod: Pod, replica: str, **extra: str) -> str:
            return _labels(
                **{
                    self.cl: pod.cluster,
                    "instance": replica,
                    "job": "kube-state-metrics",
                    "namespace": pod.namespace,
                    "pod": pod.name,
                    "uid": pod.uid,
                },
                **extra,
            )

        containers = {
            "vllm": lambda pod: pod.image,
            "obspack-exporter": lambda pod: "ghcr.io/obspack/obspack:0.1.0",
        }
        w.family("kube_pod_info", "gauge", "Information about pod.")
        for pod in self.all_pods:
            for r in replicas:
                w.series(
                    "kube_pod_info",
                    ksm(
                        pod,
                        r,
                        created_by_kind="StatefulSet" if pod.lws else "ReplicaSet",
                        host_ip=f"10.{pod.cluster_index}.9.{pod.node_index}",
                        node=pod.node,
                        pod_ip=pod.ip,
                        priority_class="",
                    ),
                    1.0,
                )
        w.family("kube_pod_status_phase", "gauge", "The pods current phase.")
        for pod in self.all_pods:
            for r in replicas:
                for phase in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
                    w.series(
                        "kube_pod_status_phase", ksm(pod, r, phase=phase), 1.0 if phase == "Running" else 0.0
                    )
        w.family("kube_pod_container_info", "gauge", "Information about a container in a pod.")
        for pod in self.all_pods:
            for r in replicas:
                for container, image in containers.items():
                    if pod.worker and container != "vllm":
                        continue
                    w.series(
                        "kube_pod_container_info",
                        ksm(
                            pod,
                            r,
                            container=container,
                            container_id=f"containerd://{_hash(container, pod.uid):08x}",
                            image=image(pod),
                            image_id=f"{image(pod)}@sha256:{_hash(image(pod)):08x}",
                            image_spec=image(pod),
                        ),
                        1.0,
                    )
        resources = {
            "kube_pod_container_resource_requests": {
                "vllm": {"memory": 48 * GIB, "cpu": 8.0},
                "obspack-exporter": {"memory": 128 * MIB, "cpu": 0.05},
            },
            "kube_pod_container_resource_limits": {
                "vllm": {"memory": 64 * GIB},
                "obspack-exporter": {"memory": 256 * MIB},
            },
        }
        units = {"memory": "byte", "cpu": "core", "nvidia_com_gpu": "integer"}
        for family, per_container in resources.items():
            w.family(family, "gauge", "The number of requested/limit resource by a container.")
            for pod in self.all_pods:
                for r in replicas:
                    for container, amounts in per_container.items():
                        if pod.worker and container != "vllm":
                            continue
                        amounts = dict(amounts)
                        if container == "vllm":
                            amounts["nvidia_com_gpu"] = float(len(pod.gpus))
                        for resource, value in amounts.items():
                            w.series(
                                family,
                                ksm(
                                    pod,
                                    r,
                                    container=container,
                                    node=pod.node,
                                    resource=resource,
                                    unit=units[resource],
                                ),
                                float(value),
                            )
        # Who owns each pod (a Deployment through its ReplicaSet) and the labels kube-state-metrics is allowed
        # to show: the team that pays, and llm-d's prefill/decode role on disaggregated pods (docs/cost.md).
        w.family("kube_pod_owner", "gauge", "Information about the Pod's owner.")
        w.family("kube_replicaset_owner", "gauge", "Information about the ReplicaSet's owner.")
        w.family("kube_pod_labels", "gauge", "Kubernetes labels converted to Prometheus labels.")
        # A LeaderWorkerSet's leaders belong to a StatefulSet named after it, and each group's workers to a
        # StatefulSet named after their leader pod; its pod labels show only where kube-state-metrics allowlists
        # them (here in every other cluster).
        for pod in self.all_pods:
            replicaset = pod.name.rsplit("-", 1)[0]
            roles = {"prefill": pod.uses("nixl-prefill"), "decode": pod.uses("nixl-decode", "mooncake-decode")}
            role = next((name for name, on in roles.items() if on), "")
            labels = {"label_team": TEAMS[pod.namespace], **({"label_llm_d_ai_role": role} if role else {})}
            owner = {"owner_kind": "ReplicaSet", "owner_name": replicaset}
            if pod.lws is not None:
                lws, worker = pod.lws
                owner = {"owner_kind": "StatefulSet", "owner_name": f"{lws}-0" if worker else lws}
                if pod.cluster_index % 2 == 0:
                    labels.update(label_leaderworkerset_sigs_k8s_io_name=lws,
                                  label_leaderworkerset_sigs_k8s_io_group_index="0",
                                  label_leaderworkerset_sigs_k8s_io_worker_index=str(worker))
            for r in replicas:
                w.series("kube_pod_owner", ksm(pod, r, **owner, owner_is_controller="true"), 1.0)
                w.series("kube_pod_labels", ksm(pod, r, **labels), 1.0)
                if pod.lws is not None:
                    continue
                w.series("kube_replicaset_owner", _labels(**{
                    self.cl: pod.cluster, "instance": r, "job": "kube-state-metrics", "namespace": pod.namespace,
                    "replicaset": replicaset, "owner_kind": "Deployment", "owner_name": replicaset.rsplit("-", 1)[0],
                    "owner_is_controller": "true", "uid": f"rs-{pod.uid}"}), 1.0)
        w.family(
            "kube_pod_container_status_restarts", "counter", "The number of container restarts per container."
        )
        for pod in self.all_pods:
            for r in replicas:
                for container in (c for c in containers if c == "vllm" or not pod.worker):
                    w.series(
                        "kube_pod_container_status_restarts_total", ksm(pod, r, container=container), 0.0
                    )

    def autoscalers(self, w: _Writer) -> None:
        """One KEDA-made HPA per cluster, namespace and model (keda-hpa-<model>), from both kube-state-metrics
        replicas: its replicas are the model's pods there, with room for two more, and it can read its metric."""
        replicas = ("10.96.0.20:8080", "10.96.0.21:8080")
        models: dict[tuple[str, str, str], int] = {}
        for pod in self.pods:
            if pod.lws is not None:  # a LeaderWorkerSet scales by groups, not through a KEDA HPA here
                continue
            key = (pod.cluster, pod.namespace, pod.model)
            models[key] = models.get(key, 0) + 1

        def hpa(cluster: str, namespace: str, model: str, replica: str, **extra: str) -> str:
            name = "keda-hpa-" + model.split("/")[-1].lower().replace(".", "-")
            return _labels(**{self.cl: cluster, "instance": replica, "job": "kube-state-metrics", "namespace": namespace,
                              "horizontalpodautoscaler": name}, **extra)

        series = {
            "kube_horizontalpodautoscaler_spec_min_replicas": lambda n: 1.0,
            "kube_horizontalpodautoscaler_spec_max_replicas": lambda n: float(n + 2),
            "kube_horizontalpodautoscaler_status_current_replicas": lambda n: float(n),
            "kube_horizontalpodautoscaler_status_desired_replicas": lambda n: float(n),
        }
        for family, value in series.items():
            w.family(family, "gauge", "HorizontalPodAutoscaler replicas.")
            for (cluster, namespace, model), n in sorted(models.items()):
                for r in replicas:
                    w.series(family, hpa(cluster, namespace, model, r), value(n))
        w.family("kube_horizontalpodautoscaler_status_condition", "gauge", "The condition of this autoscaler.")
        for (cluster, namespace, model), _ in sorted(models.items()):
            for r in replicas:
                for condition in ("AbleToScale", "ScalingActive", "ScalingLimited"):
                    for status in ("true", "false", "unknown"):
                        on = (status == "true") != (condition == "ScalingLimited") and status != "unknown"
                        w.series("kube_horizontalpodautoscaler_status_condition",
                                 hpa(cluster, namespace, model, r, condition=condition, status=status), float(on))

    # -- DCGM --------------------------------------------------------------------------------------

    def gpus(self) -> Iterator[tuple[str, Pod | None, Pod, int]]:
        """(labels, holder or None, a pod on the same node, gpu index) for every GPU, idle ones too."""
        by_node: dict[tuple[str, int], list[Pod]] = {}
        for pod in self.all_pods:
            by_node.setdefault((pod.cluster, pod.node_index), []).append(pod)
        for pods in by_node.values():
            used = {g: pod for pod in pods for g in pod.gpus}
            idle = max(used) + 1
            for g in [*sorted(used), idle]:
                holder = used.get(g)
                anchor = pods[0]
                yield self.dcgm_labels(anchor, holder, g), holder, anchor, g

    def dcgm_labels(self, anchor: Pod, holder: Pod | None, gpu: int) -> str:
        exporter_pod = f"nvidia-dcgm-exporter-{_suffix('dcgm', anchor.cluster, anchor.node)}"
        host_label = "Hostname" if anchor.cluster_index % 2 == 0 else "hostname"
        labels = {
            self.cl: anchor.cluster,
            "DCGM_FI_DRIVER_VERSION": "550.127.05",
            "UUID": f"GPU-{_hash('uuid', anchor.cluster, anchor.node, gpu):08x}-7d2c-4b1e-9f3a-{_hash(anchor.node, gpu):012x}",
            host_label: anchor.node,
            "device": f"nvidia{gpu}",
            "endpoint": "gpu-metrics",
            "gpu": str(gpu),
            "instance": f"10.{anchor.cluster_index}.9.{anchor.node_index}:9400",
            "job": "nvidia-dcgm-exporter",
            "modelName": GPU_MODEL,
            "pci_bus_id": f"00000000:{0x18 + gpu * 0x10:02X}:00.0",
            "service": "nvidia-dcgm-exporter",
            # honorLabels: false keeps the target's own pod labels; true keeps them only where the
            # exporter set none (idle GPUs).
            "namespace": "gpu-operator",
            "pod": exporter_pod,
            "container": "nvidia-dcgm-exporter",
        }
        if holder is not None:
            workload = {"namespace": holder.namespace, "pod": holder.name, "container": "vllm"}
            if anchor.dcgm_mode == "pod":
                labels.update(workload)
            else:
                labels.update({f"exported_{k}": v for k, v in workload.items()})
        return _labels(**labels)

    def dcgm(self, w: _Writer) -> None:
        n = self.spec.steps
        gpus = list(self.gpus())

        def field_(
            name: str,
            help_text: str,
            value: Callable[[Pod | None, int], Values | float],
            where: Callable[[Pod], bool] = lambda pod: True,
        ) -> None:
            w.family(name, "gauge", help_text)
            for labels, holder, anchor, g in gpus:
                if where(anchor):
                    w.series(name, labels, value(holder, g))

        def busy(holder: Pod | None) -> Values:
            if holder is None:
                return [0.0] * n
            return [min(1.0, 0.25 + 0.05 * r) for r in self.profile(holder).running]

        def fb_used(holder: Pod | None, g: int) -> Values:
            if holder is None:
                return [0.0] * n
            return [float(int(GPU_FB_MIB * 0.9 + 600 + (k + g) % 5 * 10)) for k in range(n)]

        field_("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", fb_used)
        field_(
            "DCGM_FI_DEV_FB_FREE",
            "Framebuffer memory free (in MiB).",
            lambda h, g: [GPU_FB_MIB - u for u in fb_used(h, g)],
        )
        field_(
            "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda h, g: [round(100 * b) for b in busy(h)]
        )
        field_(
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "Ratio of time the graphics engine is active.",
            lambda h, g: busy(h),
        )
        field_(
            "DCGM_FI_PROF_SM_ACTIVE",
            "The ratio of cycles an SM has at least 1 warp assigned.",
            lambda h, g: [0.8 * b for b in busy(h)],
            where=lambda pod: pod.cluster_index % 2 == 0,
        )
        field_(
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            "Ratio of cycles the tensor (HMMA) pipe is active.",
            lambda h, g: [0.4 * b for b in busy(h)],
        )
        field_(
            "DCGM_FI_DEV_GPU_TEMP",
            "GPU temperature (in C).",
            lambda h, g: [float(round(38 + 30 * b)) for b in busy(h)],
        )
        field_(
            "DCGM_FI_DEV_POWER_USAGE",
            "Power draw (in W).",
            lambda h, g: [round(70 + 500 * b, 3) for b in busy(h)],
        )
        field_("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda h, g: 1980.0)
        field_("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", lambda h, g: 0.0)

    # -- obspack exporter ------------------------------------------------------------------------

    def exporter_labels(self, pod: Pod, **extra: str) -> str:
        labels = self.target(pod, "obspack-exporter", "obspack-exporter", 9835)
        labels["endpoint"] = "obspack"
        labels.update(extra)
        return _labels(**labels)

    def exporter(self, w: _Writer) -> None:
        def engine_labels(pod: Pod, e: str, **extra: str) -> str:
            return self.exporter_labels(pod, **({"engine": e} if e else {}), model_name=pod.model, **extra)

        def per_engine(name: str, help_text: str, value: Callable[[Pod, Profile], Values | None]) -> None:
            w.family(name, "gauge", help_text)
            for pod in self.pods:
                p = self.profile(pod)
                values = value(pod, p)
                if values is not None:
                    for e in pod.engines:
                        w.series(name, engine_labels(pod, e), values)

        def used(p: Profile) -> list[int]:
            return [round(kv * p.num_gpu_blocks) for kv in p.kv]

        per_engine(
            "obspack_vllm_prefix_cache_hit_ratio",
            "Prefix cache hits / queries over the window.",
            lambda pod, p: [0.46] * self.spec.steps if pod.generation == "v1" else None,
        )
        per_engine(
            "obspack_vllm_prefix_cache_hit_ratio_lifetime",
            "Prefix cache hits / queries since start.",
            lambda pod, p: [0.46 if pod.generation == "v1" else 0.41] * self.spec.steps,
        )
        w.family("obspack_vllm_kv_cache_blocks", "gauge", "KV cache blocks by state (used, free).")
        for pod in self.pods:
            p = self.profile(pod)
            for e in pod.engines:
                u = used(p)
                w.series(
                    "obspack_vllm_kv_cache_blocks", engine_labels(pod, e, state="used"), [float(x) for x in u]
                )
                w.series(
                    "obspack_vllm_kv_cache_blocks",
                    engine_labels(pod, e, state="free"),
                    [float(p.num_gpu_blocks - x) for x in u],
                )
        per_engine(
            "obspack_vllm_kv_cache_block_size_tokens",
            "Tokens per KV cache block.",
            lambda pod, p: [float(p.block_size)] * self.spec.steps,
        )
        per_engine(
            "obspack_vllm_kv_cache_fragmentation_ratio",
            "Estimated internal fragmentation of used KV blocks.",
            lambda pod, p: [
                r * (p.block_size - 1) / 2 / max(u * p.block_size, 1) for r, u in zip(p.running, used(p))
            ],
        )
        per_engine(
            "obspack_vllm_kv_cache_admission_headroom_requests",
            "More requests of average KV size that fit.",
            lambda pod, p: [
                (p.num_gpu_blocks - u) / (u / r) if r > 0 and u > 0 else 0.0
                for r, u in zip(p.running, used(p))
            ],
        )
        w.family("obspack_target_up", "gauge", "1 if the last scrape of the target succeeded.")
        for pod in self.pods:
            w.series(
                "obspack_target_up", self.exporter_labels(pod, target="http://127.0.0.1:8000/metrics"), 1.0
            )

        def per_device(
            name: str, kind: str, help_text: str, value: Callable[[Pod, int], Values | float]
        ) -> None:
            w.family(name.removesuffix("_total"), kind, help_text)
            for pod in self.pods:
                for device in range(len(pod.gpus)):
                    labels = self.exporter_labels(pod, device=str(device), pid=str(100 + device))
                    w.series(name, labels, value(pod, device))

        # a steady engine (benchmarks/cuda_allocator_bench.py on an H100): weights and KV cache are nearly all
        # of what the allocator reserves; about 1 GiB is unused, a few percent of that in split blocks
        reserved = 0.88 * GPU_FB_MIB * MIB
        unused, split = 1024 * MIB, 45 * MIB
        per_device(
            "obspack_cuda_allocator_reserved_bytes",
            "gauge",
            "Bytes reserved by the CUDA caching allocator.",
            lambda pod, d: reserved,
        )
        per_device(
            "obspack_cuda_allocator_allocated_bytes",
            "gauge",
            "Bytes allocated to live tensors.",
            lambda pod, d: reserved - unused,
        )
        per_device(
            "obspack_cuda_allocator_inactive_split_bytes",
            "gauge",
            "Reserved bytes in inactive split blocks.",
            lambda pod, d: split,
        )
        per_device(
            "obspack_cuda_allocator_fragmentation_ratio",
            "gauge",
            "Inactive split bytes / (reserved - allocated bytes).",
            lambda pod, d: split / unused,
        )
        per_device(
            "obspack_cuda_alloc_retries_total",
            "counter",
            "cudaMalloc retries after a cache flush.",
            lambda pod, d: 0.0,
        )
        per_device(
            "obspack_cuda_ooms_total",
            "counter",
            "CUDA out-of-memory errors seen by the allocator.",
            lambda pod, d: 0.0,
        )


    # -- the inference gateway: one InferencePool and its endpoint picker per namespace and model -----------

    def pools(self) -> list[tuple[Pod, str, list[Pod]]]:
        """(a pod of the pool, the pool's name, its pods) per cluster, namespace and model."""
        by_pool: dict[tuple[str, str, str], list[Pod]] = {}
        for pod in self.pods:
            by_pool.setdefault((pod.cluster, pod.namespace, pod.pool), []).append(pod)
        return [(pods[0], pool, pods) for (_, _, pool), pods in sorted(by_pool.items())]

    def epps(self) -> Iterator[tuple[dict[str, str], str, list[Pod], float, bool]]:
        """(scrape labels, pool, its pods, this replica's share of the requests, whether the canonical llm_d_epp_*
        names are emitted) per EPP replica. Even clusters run llm-d router v0.10 (both names: the canonical ones
        and their deprecated twins), odd ones the llm-d inference scheduler v0.8 (GAIE v1.5's names only, and its
        own P/D counter); each cluster's first pool has two EPP replicas, which split the requests and both
        report the pool."""
        previous = ""  # the cluster of the pool before (pools come sorted by cluster)
        for k, (anchor, pool, pods) in enumerate(self.pools()):
            replicas = 2 if anchor.cluster != previous else 1
            previous = anchor.cluster
            for r in range(replicas):
                labels = {
                    self.cl: anchor.cluster, "namespace": anchor.namespace,
                    "pod": f"{pool}-epp-{_suffix('epp-rs', pool)}-{_suffix('epp', pool, r)}", "container": "epp",
                    "endpoint": "http-metrics", "instance": f"10.{anchor.cluster_index}.210.{k % 250 + r}:9090",
                    "job": f"{pool}-epp", "service": f"{pool}-epp",
                }
                yield labels, pool, pods, 1 / replicas, anchor.cluster_index % 2 == 0

    def gateway(self, w: _Writer) -> None:
        epps = list(self.epps())

        def emitting(canonical: bool) -> list[tuple[dict[str, str], str, list[Pod], float, bool]]:
            """The replicas that emit a canonical llm_d_epp_* name (the routers), or its older twin (all)."""
            return [e for e in epps if e[4] or not canonical]

        def per_pod(pod: Pod, values: Callable[[Profile], Values]) -> Values:
            return [v * len(pod.engines) for v in values(self.profile(pod))]

        def mean(pods: list[Pod], values: Callable[[Profile], Values]) -> Values:
            series = [values(self.profile(pod)) for pod in pods]
            return [sum(col) / len(series) for col in zip(*series)]

        def requests(pods: list[Pod], share: float) -> Values:
            series = [per_pod(pod, lambda p: p.requests) for pod in pods]
            return [float(int(sum(col) * share)) for col in zip(*series)]

        def gauge(names: gw.Twins, values: Callable[[str, list[Pod]], Values | float]) -> None:
            """A pool gauge under its canonical name (router clusters) and its older twin (every cluster)."""
            for canonical, name in ((True, names.canonical), (False, names.legacy)):
                w.family(name, "gauge", "Endpoint picker pool metric.")
                for labels, pool, pods, _, _ in emitting(canonical):
                    w.series(name, _labels(**labels, name=pool), values(pool, pods))

        version = {True: "v0.10.0", False: "v1.5.0"}
        for canonical, name in ((True, gw.INFO.canonical), (False, gw.INFO.legacy)):
            w.family(name, "gauge", "Build information of the endpoint picker.")
            for labels, _, _, _, new in emitting(canonical):
                w.series(name, _labels(**labels, commit=f"{_hash(version[new]):08x}", build_ref=version[new]), 1.0)
        gauge(gw.READY,
              lambda pool, pods: float(len(pods)))
        gauge(gw.AVG_KV,
              lambda pool, pods: mean(pods, lambda p: p.kv))
        gauge(gw.AVG_QUEUE,
              lambda pool, pods: mean(pods, lambda p: p.waiting))
        gauge(gw.AVG_RUNNING,
              lambda pool, pods: mean(pods, lambda p: p.running))
        for name, label, canonical in ((gw.ENDPOINT_QUEUE.canonical, gw.ENDPOINT_LABEL.canonical, True),
                                       (gw.ENDPOINT_QUEUE.legacy, gw.ENDPOINT_LABEL.legacy, False)):
            w.family(name, "gauge", "Requests waiting per endpoint of the pool.")
            for labels, pool, pods, _, _ in emitting(canonical):
                for pod in pods:
                    w.series(name, _labels(**labels, name=pool, **{label: pod.name}), per_pod(pod, lambda p: p.waiting))

        def per_model(labels: dict[str, str], pods: list[Pod], canonical: bool, **extra: str) -> str:
            model = pods[0].model
            more = {"fairness_id": "default-flow", "priority": "0"} if canonical else {}
            return _labels(**labels, model_name=model, target_model_name=model, **more, **extra)

        for name, canonical in ((gw.REQUESTS, True), (gw.OBJECTIVE_REQUESTS, False)):
            w.family(name.removesuffix("_total"), "counter", "Requests the endpoint picker routed.")
            for labels, _, pods, share, _ in emitting(canonical):
                extra = {} if canonical else {"priority": "0"}
                w.series(name, per_model(labels, pods, canonical, **extra), requests(pods, share))
        durations = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0,
                     15.0, 20.0, 30.0, 45.0, 60.0, 120.0, 180.0, 240.0, 300.0, 360.0, 480.0, 600.0)
        for name, canonical in (("llm_d_epp_request_duration_seconds", True),
                                ("inference_objective_request_duration_seconds", False)):
            w.family(name, "histogram", "End-to-end latency of the requests the endpoint picker routed.")
            for labels, _, pods, share, _ in emitting(canonical):
                median = self.profile(pods[0]).e2e_median
                for suffix, le, values in _hist(requests(pods, share), durations, median, 0.6):
                    w.series(name + suffix, per_model(labels, pods, canonical) + (f",{le}" if le else ""), values)
        scheduling = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)
        for name, canonical in ((gw.SCHEDULER_E2E.canonical, True), (gw.SCHEDULER_E2E.legacy, False)):
            w.family(name, "histogram", "Time the endpoint picker took to pick an endpoint.")
            for labels, _, pods, share, _ in emitting(canonical):
                for suffix, le, values in _hist(requests(pods, share), scheduling, 0.0015, 0.5):
                    w.series(name + suffix, _labels(**labels) + (f",{le}" if le else ""), values)
        # Flow control (a feature gate, on in the router clusters) and the P/D decisions of the pools that
        # have a prefill pod.
        w.family("llm_d_epp_flow_control_requests", "counter", "Requests through flow control, by outcome.")
        for labels, pool, pods, share, new in epps:
            if new:
                w.series(gw.FLOW_REQUESTS,
                         _labels(**labels, inference_pool=pool, outcome="Dispatched", priority="0"), requests(pods, share))
        for name, canonical in ((gw.FLOW_SATURATION.canonical, True), (gw.FLOW_SATURATION.legacy, False)):
            w.family(name, "gauge", "Saturation of the pool (1: gating).")
            for labels, pool, pods, _, new in epps:
                if new == canonical:
                    w.series(name, _labels(**labels, inference_pool=pool), mean(pods, lambda p: [0.1 + kv * 0.6 for kv in p.kv]))
        # The router's own time per request (v0.9+), flow control's wait included.
        name = gw.REQUEST_PROCESSING
        w.family(name, "histogram", "Time the endpoint picker spent on a request.")
        for labels, _, pods, share, new in epps:
            if new:
                for suffix, le, values in _hist(requests(pods, share), scheduling, 0.003, 0.5):
                    w.series(name + suffix, _labels(**labels) + (f",{le}" if le else ""), values)
        # The P/D decisions of the pools with a prefill pod: the router's counter, and in the other clusters the
        # llm-d inference scheduler v0.8's own (it runs on GAIE v1.5's library, hence the older names above).
        for name, canonical in (("llm_d_epp_disagg_decision_total", True),
                                ("llm_d_inference_scheduler_pd_decision_total", False)):
            w.family(name.removesuffix("_total"), "counter", "Disaggregation decisions of the endpoint picker.")
            for labels, _, pods, share, new in epps:
                if new == canonical and any(pod.role == "prefill" for pod in pods):
                    plugin = {"plugin_name": "pd-profile-handler", "plugin_type": "disagg-profile-handler"}
                    for decision, part in (("prefill-decode", 0.8), ("decode-only", 0.2)):
                        w.series(name, _labels(**labels, **(plugin if canonical else {}), model_name=pods[0].model,
                                               decision_type=decision),
                                 [float(int(x * part)) for x in requests(pods, share)])


# The families by source, in file order. `write_openmetrics_by_source` writes one file per entry.
SOURCES: dict[str, tuple[str, ...]] = {
    "vllm": ("vllm_gauges", "vllm_counters", "vllm_histograms", "vllm_features"),
    "kubernetes": ("cadvisor", "kube_state_metrics", "autoscalers"),
    "dcgm": ("dcgm",),
    "exporter": ("exporter",),
    "gateway": ("gateway",),
}


def _stamps(spec: FleetSpec) -> list[str]:
    return [str(spec.first + k * spec.step_s) for k in range(spec.steps)]


def write_openmetrics(spec: FleetSpec, path: Path) -> FleetSummary:
    """Stream the whole fleet into `path` as OpenMetrics text and say what it holds."""
    fleet = _Fleet(spec)
    with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
        w = _Writer(out, _stamps(spec))
        for sections in SOURCES.values():
            for section in sections:
                getattr(fleet, section)(w)
        out.write("# EOF\n")
    return FleetSummary(spec=spec, pods=tuple(fleet.pods), series=w.count, samples=w.samples, workers=fleet.workers)


def write_openmetrics_by_source(
    spec: FleetSpec, directory: Path, done: Callable[[Path], None] | None = None
) -> FleetSummary:
    """The fleet of `write_openmetrics`, as one OpenMetrics file per source (`vllm.om`, ..., `exporter.om`).

    `done(path)` is called as soon as a file is complete, so a caller can backfill it with promtool
    while the next one is being written (for big fleets, where promtool is the slow part).
    """
    fleet = _Fleet(spec)
    stamps = _stamps(spec)
    families: set[str] = set()
    series = samples = 0
    for source, sections in SOURCES.items():
        path = directory / f"{source}.om"
        with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
            w = _Writer(out, stamps, families=families)
            for section in sections:
                getattr(fleet, section)(w)
            out.write("# EOF\n")
        series, samples = series + w.count, samples + w.samples
        if done is not None:
            done(path)
    return FleetSummary(spec=spec, pods=tuple(fleet.pods), series=series, samples=samples, workers=fleet.workers)
