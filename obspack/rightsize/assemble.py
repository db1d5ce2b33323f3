"""From the measured rows to workloads and their recommendations (pure: no server, no clock).

Rows are per container, pod or image; a workload gathers its pods' rows and takes the worst of them (its
pods share one pod template, so the limit must fit the pod that needed the most).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from obspack.rightsize import histograms as h
from obspack.rightsize import sizing, workloads
from obspack.rightsize.measure import Measurements
from obspack.rightsize.model import (
    GPU,
    Confidence,
    Key,
    Knob,
    KVVerdict,
    Level,
    Memory,
    Release,
    Risk,
    Workload,
)
from obspack.rightsize.queries import Plan

ContainerKey = tuple[str, str, str, str]  # cluster, namespace, pod, container
PodKey = tuple[str, str, str]


@dataclass(frozen=True)
class Settings:
    min_history_s: int
    release_rise: float
    prefix_low: float  # the hit rate under which prefix caching is "low" (the alert's threshold)
    fragmentation_high: float  # the CUDA allocator fragmentation that calls for expandable segments


def _max(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None


def _sum(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return sum(found) if found else None


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class _Index:
    """The rows of one measurement run, grouped by pod once, looked up by container, pod or image."""

    def __init__(self, m: Measurements) -> None:
        self.m = m
        self._by_pod: dict[str, dict[PodKey, list[tuple[tuple[str, ...], float]]]] = {}

    def rows(self, name: str, pods: Iterable[PodKey]) -> list[tuple[tuple[str, ...], float]]:
        """The rows of the pods, whatever else they are keyed by (container, image, le, model, settings)."""
        if name not in self._by_pod:
            grouped: dict[PodKey, list[tuple[tuple[str, ...], float]]] = defaultdict(list)
            for key, value in self.m.rows.get(name, {}).items():
                grouped[key[:3]].append((key, value))  # type: ignore[index]
            self._by_pod[name] = grouped
        found = self._by_pod[name]
        return [row for pod in pods for row in found.get(pod, ())]

    def container(self, name: str, keys: set[ContainerKey]) -> list[float]:
        return [v for k, v in self.rows(name, {k[:3] for k in keys}) if k[:4] in keys]

    def pod(self, name: str, pods: Iterable[PodKey]) -> list[float]:
        return [v for _, v in self.rows(name, pods)]

    def images(self, name: str, keys: set[ContainerKey]) -> dict[tuple[str, ...], float]:
        return {k: v for k, v in self.rows(name, {k[:3] for k in keys}) if k[:4] in keys}

    def buckets(self, name: str, pods: set[PodKey]) -> h.Buckets:
        """A histogram's buckets summed over the pods (keys: cluster, namespace, pod, le)."""
        summed: dict[float, float] = defaultdict(float)
        for key, value in self.rows(name, pods):
            le = key[3]
            bound = math.inf if le.lstrip("+").lower() == "inf" else _number(le)
            if bound is not None:
                summed[bound] += value
        return h.cumulative(summed.items())

    def pod_sum(self, name: str, pods: set[PodKey]) -> float | None:
        found = self.pod(name, pods)
        return sum(found) if found else None

    def labelled(self, name: str, pods: Iterable[PodKey]) -> list[tuple[str, ...]]:
        """The label values (after the pod) of label-valued rows, e.g. cache_config's settings."""
        return sorted(k[3:] for k, _ in self.rows(name, pods))


def assemble(m: Measurements, plan: Plan, settings: Settings) -> tuple[tuple[Workload, ...], tuple[str, ...]]:
    """The workloads found by discovery, sized; and notes on what could not be measured."""
    index = _Index(m)
    containers = sorted(m.rows.get("containers", {}))
    owners = workloads.from_rows(m.get("pod_owner"), m.get("replicaset_owner"), m.get("leaderworkerset"))
    groups: dict[tuple[Key, bool], list[ContainerKey]] = defaultdict(list)
    for cluster, namespace, pod, container in containers:
        owner = workloads.owner_of((cluster, namespace, pod), owners)
        key = Key(cluster, namespace, owner.kind, owner.name, container)
        groups[(key, owner.guessed)].append((cluster, namespace, pod, container))
    ordered = sorted(groups.items(), key=lambda group: _order(group[0][0]))
    built = tuple(_workload(index, key, guessed, members, plan, settings) for (key, guessed), members in ordered)
    return built, _notes(m, built)


def _order(key: Key) -> tuple[str, ...]:
    return (key.cluster, key.namespace, key.kind, key.name, key.container)


def _workload(
    index: _Index, key: Key, guessed: bool, members: list[ContainerKey], plan: Plan, settings: Settings
) -> Workload:
    keys = set(members)
    pods = {k[:3] for k in members}
    alive = {k for k in keys if k in index.m.rows.get("ram_now", {})}
    alive_pods = {k[:3] for k in alive}
    models = tuple(sorted({k[3] for k, _ in index.rows("models", pods) if k[3]}))
    memory, confidence = _memory(index, key, keys, alive, plan, settings)
    gpu, knobs = _engine(index, pods, alive_pods or pods, settings)
    fragmentation = _max(index.pod("cuda_fragmentation_p99", pods))
    retries = _sum(index.pod("cuda_alloc_retries", pods))
    env = sizing.allocator_env(fragmentation, retries, settings.fragmentation_high)
    releases = _releases(index, keys, settings)
    return Workload(
        key=key,
        owner_guessed=guessed,
        models=models,
        images=tuple(r.image for r in releases),
        pods=len(pods),
        memory=memory,
        gpu=gpu,
        knobs=knobs,
        env=(env,) if env else (),
        releases=releases,
        confidence=confidence,
        alive=bool(alive),
    )


def _memory(
    index: _Index, key: Key, keys: set[ContainerKey], alive: set[ContainerKey], plan: Plan, settings: Settings
) -> tuple[Memory, Confidence]:
    def peak(name: str) -> float | None:
        return _max(index.images(name, keys).values())

    load, serving, p99, traffic = (peak(n) for n in ("ram_load_peak", "ram_serving_peak", "ram_serving_p99", "ram_traffic_peak"))
    split = load is not None or serving is not None
    if not split:  # no start time known: the whole window stands in for serving
        serving, p99 = peak("ram_peak"), peak("ram_p99")
    points = int(sum(index.images("ram_points", keys).values()))
    first = list(index.images("ram_first_seen", keys).values())
    span = plan.at - min(first) if first else 0.0
    restarts = int(round(sum(index.container("restarts", keys))))
    oom_kills = int(round(sum(index.container("oom_kills", keys))))
    current_limit = _max(index.container("limit_now", alive))
    current_request = _max(index.container("request_now", alive))
    # A workload no pod of which ran at the end has no current limit to judge: never "no limit".
    ksm = key.cluster in {k[0] for k in index.m.rows.get("ksm_present", {})}
    limits_known = bool(alive) and (ksm or current_limit is not None)
    highest = _max((load, serving))
    usage_at_kill = (_max(index.container("oom_limit", keys)) or highest) if oom_kills else None
    confidence = _confidence(points, span, restarts, load is not None, split, plan, settings)
    risk, ratio = sizing.host_risk(highest, current_limit, oom_kills, limits_known)
    if confidence.level is Level.NONE:
        limit, request = None, None
        limit_rule = request_rule = "not enough data"
    else:
        limit, limit_rule = sizing.memory_limit(highest, usage_at_kill)
        request, request_rule = sizing.memory_request(p99, limit)
    sized = confidence.level is not Level.NONE
    missing_request = limits_known and current_request is None and request is not None
    limit_change = sized and (
        risk in (Risk.OOM, Risk.HIGH, Risk.TIGHT, Risk.NO_LIMIT) or sizing.differs(limit, current_limit)
    )
    request_change = sized and (sizing.differs(request, current_request) or missing_request)
    memory = Memory(
        load_peak=load,
        serving_peak=serving,
        serving_p99=p99,
        traffic_peak=traffic,
        split=split,
        oom_kills=oom_kills,
        usage_at_kill=usage_at_kill,
        current_request=current_request,
        current_limit=current_limit,
        request=request,
        limit=limit,
        request_rule=request_rule,
        limit_rule=limit_rule,
        risk=risk,
        peak_to_limit=ratio,
        limit_change=limit_change,
        request_change=request_change,
    )
    return memory, confidence


def _confidence(
    points: int, span: float, restarts: int, load_seen: bool, split: bool, plan: Plan, settings: Settings
) -> Confidence:
    if points == 0:
        why = "no cAdvisor working set: is cAdvisor scraped, and does the image match vllm_containers.image_regex?"
        return Confidence(Level.NONE, 0, 0.0, restarts, (why,))
    found = sizing.confidence(points, span, restarts, settings.min_history_s, plan.window_s, load_seen)
    if split:
        return found
    level = Level.LOW if found.level is Level.HIGH else found.level
    reasons = (*found.reasons, "no container start times: model load and serving not told apart")
    return Confidence(level, points, span, restarts, reasons)


def _config(index: _Index, pods: set[PodKey]) -> dict[str, float | bool | None]:
    """The cache config the pods run with (vllm:cache_config_info), newest values first."""
    utilization, prefix, tokens, concurrency = [], [], [], []
    for util, enabled, size, conc in index.labelled("cache_config", pods):
        utilization.append(_number(util))
        prefix.append({"True": True, "False": False}.get(enabled))
        tokens.append(_number(size))
        concurrency.append(_number(conc))
    max_len = None
    if tokens and concurrency:
        pairs = [(t, c) for t, c in zip(tokens, concurrency) if t and c]
        max_len = max(round(t / c) for t, c in pairs) if pairs else None
    return {
        "utilization": _max(utilization),
        "prefix": next((p for p in prefix if p is not None), None),
        "max_model_len": max_len,
    }


def _engine(
    index: _Index, pods: set[PodKey], current_pods: set[PodKey], settings: Settings
) -> tuple[GPU | None, tuple[Knob, ...]]:
    has_engine = any(index.pod(name, pods) for name in ("running_peak", "kv_peak", "kv_p99", "models"))
    if not has_engine:
        return None, ()
    config = _config(index, current_pods) if index.labelled("cache_config", current_pods) else _config(index, pods)
    fb_total = _max(index.pod("fb_total", pods))
    fb_peak, fb_median = _max(index.pod("fb_peak", pods)), _max(index.pod("fb_median", pods))
    kv_peak, kv_p99 = _max(index.pod("kv_peak", pods)), _max(index.pod("kv_p99", pods))
    preemptions = _sum(index.pod("preemptions", pods))
    waiting_peak = _max(index.pod("waiting_peak", pods))
    waiting_share = _max(index.pod("waiting_share", pods))
    by_reason = bool(index.pod("waits_by_reason", pods))
    verdict = sizing.kv_verdict(kv_peak, kv_p99, preemptions, waiting_share, by_reason)
    ratio = fb_peak / fb_total if fb_peak is not None and fb_total else None
    utilization = sizing.utilization(config["utilization"], ratio, verdict)  # type: ignore[arg-type]

    prompt = index.buckets("prompt_tokens", pods)
    generation = index.buckets("generation_tokens", pods)
    current_len, len_note = config["max_model_len"], "kv_cache_size_tokens / kv_cache_max_concurrency"
    if current_len is None:
        bound = h.highest_finite(prompt)
        current_len = bound
        len_note = f"at least {bound:g} (vLLM sizes its token buckets up to it)" if bound else "unknown"
    hits, queries = index.pod_sum("prefix_hits", pods), index.pod_sum("prefix_queries", pods)
    hit_rate = hits / queries if hits is not None and queries else None
    knobs = [
        sizing.max_model_len(prompt, generation, current_len, len_note),  # type: ignore[arg-type]
        sizing.max_num_seqs(_max(index.pod("running_peak", pods)), waiting_share, kv_p99),
        sizing.max_num_batched_tokens(index.buckets("iteration_tokens", pods)),
    ]
    prefix = sizing.prefix_caching(config["prefix"], hit_rate, verdict is KVVerdict.TOO_SMALL, settings.prefix_low)  # type: ignore[arg-type]
    if prefix is not None:
        knobs.append(prefix)
    gpu = GPU(
        framebuffer_total=fb_total,
        peak=fb_peak,
        median=fb_median,
        gpu_memory_utilization=config["utilization"],  # type: ignore[arg-type]
        kv_peak=kv_peak,
        kv_p99=kv_p99,
        preemptions=preemptions,
        waiting_peak=waiting_peak,
        waiting_share=waiting_share,
        waits_by_reason=by_reason,
        verdict=verdict,
        recommended_utilization=utilization,
        advice=_advice(verdict, utilization, ratio, kv_peak, kv_p99, preemptions, waiting_share, knobs),
    )
    return gpu, tuple(knobs)


def _advice(
    verdict: KVVerdict,
    utilization: float | None,
    ratio: float | None,
    kv_peak: float | None,
    kv_p99: float | None,
    preemptions: float | None,
    waiting_share: float | None,
    knobs: list[Knob],
) -> tuple[str, ...]:
    out = []
    if ratio is not None and ratio > sizing.FB_DANGER and utilization is not None:
        out.append(f"framebuffer peaked at {ratio:.0%}: lower --gpu-memory-utilization to {utilization:.2f} (CUDA out-of-memory risk)")
    if verdict is KVVerdict.TOO_SMALL:
        why = []
        if preemptions:
            why.append(f"{preemptions:.0f} preemptions")
        if kv_p99 is not None and kv_p99 >= sizing.KV_FULL:
            why.append(f"KV cache p99 {kv_p99:.0%}")
        if waiting_share and waiting_share >= sizing.WAIT_SHARE:
            why.append(f"requests waited for capacity {waiting_share:.1%} of the time")
        out.append("KV cache too small (" + ", ".join(why) + ")")
        if utilization is not None and (ratio is None or ratio <= sizing.FB_DANGER):
            out.append(f"raise --gpu-memory-utilization to {utilization:.2f} (the framebuffer peaked at {ratio:.0%})")
        long_context = next((k for k in knobs if k.flag == "--max-model-len" and k.change), None)
        if long_context is not None:
            out.append(f"lower --max-model-len to {long_context.recommended:.0f}: rare long requests hold the cache")
        if any(k.flag == "--no-enable-prefix-caching" and k.change for k in knobs):
            out.append("turn prefix caching off: few hits for its bookkeeping")
        out.append("or add replicas: each replica has its own KV cache")
    elif verdict is KVVerdict.IDLE and kv_peak:
        out.append(
            f"KV cache peaked at {kv_peak:.0%}: a replica could take about {sizing.KV_ROOM / kv_peak:.1f}x its traffic "
            "(fewer replicas), or a lower --gpu-memory-utilization"
        )
    return tuple(out)


def _releases(index: _Index, keys: set[ContainerKey], settings: Settings) -> tuple[Release, ...]:
    per_image: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for name in ("ram_first_seen", "ram_load_peak", "ram_serving_peak"):
        for (*container, image), value in index.images(name, keys).items():
            per_image[image][name].append(value)
            per_image[image]["pods"].append(tuple(container[:3]))
    releases = []
    for image, found in per_image.items():
        if not found["ram_first_seen"]:
            continue
        pods = set(found["pods"])
        gpu = _max(index.pod("fb_peak", pods))
        releases.append(
            Release(
                image=image,
                first_seen=min(found["ram_first_seen"]),
                pods=len(pods),
                load_peak=_max(found["ram_load_peak"]),
                serving_peak=_max(found["ram_serving_peak"]),
                gpu_peak=gpu,
            )
        )
    return sizing.compare_releases(releases, settings.release_rise)


def _notes(m: Measurements, built: tuple[Workload, ...]) -> tuple[str, ...]:
    notes = []
    if not built and any(f.quantity == "containers" for f in m.failures):
        notes.append("the question that finds the vLLM containers failed (see the failed questions): nothing was sized")
        return tuple(notes)
    if not built:
        notes.append(
            "no vLLM workloads found in the window: no container image matches vllm_containers.image_regex "
            "and no vLLM engine metrics name a container (check the selectors with `obspack doctor`)"
        )
        return tuple(notes)
    unmeasured = [w for w in built if w.confidence.points == 0]
    if unmeasured:
        notes.append(
            f"{len(unmeasured)} workload(s) have no cAdvisor working set: their image does not match "
            "vllm_containers.image_regex (set it, or vllm_containers.name_regex), or cAdvisor is not scraped"
        )
    if not m.rows.get("ksm_present"):
        notes.append("no kube-state-metrics limits: current requests and limits are unknown, owners read from pod names")
    engines = [w for w in built if w.gpu is not None]
    if engines and all(w.gpu.framebuffer_total is None for w in engines):  # type: ignore[union-attr]
        notes.append("no dcgm-exporter framebuffer series for the vLLM pods: GPU memory not measured")
    if m.malformed:
        notes.append(f"{m.malformed} answer rows were not Prometheus API rows and were left out")
    return tuple(notes)

