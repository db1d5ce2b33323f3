"""From the measured rows to workloads and their recommendations (pure: no server, no clock).

Rows are per container, pod or image; a workload gathers its pods' rows and takes the worst of them (its
pods share one pod template, so the limit must fit the pod that needed the most).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from obspack.rightsize import backtest, sizing, workloads
from obspack.rightsize import histograms as h
from obspack.rightsize.backtest import sentence
from obspack.rightsize.measure import Measurements
from obspack.rightsize.model import (
    GPU,
    Backtest,
    Confidence,
    Decision,
    Key,
    Knob,
    KVVerdict,
    Level,
    Load,
    LoadSource,
    Memory,
    Release,
    Workload,
)
from obspack.rightsize.queries import Plan

ContainerKey = tuple[str, str, str, str]  # cluster, namespace, pod, container
PodKey = tuple[str, str, str]
RunKey = tuple[str, str, str, str, str]  # the container and its cgroup id
Group = tuple[Key, bool]  # the workload and whether its owner was guessed


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


def _when(at: float | None) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%MZ") if at else "?"


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


def groups(m: Measurements) -> dict[Group, list[ContainerKey]]:
    """The containers discovery found, by workload (owner and container), in report order."""
    owners = workloads.from_rows(m.get("pod_owner"), m.get("replicaset_owner"), m.get("leaderworkerset"))
    found: dict[Group, list[ContainerKey]] = defaultdict(list)
    for cluster, namespace, pod, container in sorted(m.rows.get("containers", {})):  # type: ignore[misc]
        owner = workloads.owner_of((cluster, namespace, pod), owners)
        key = Key(cluster, namespace, owner.kind, owner.name, container)
        found[(key, owner.guessed)].append((cluster, namespace, pod, container))
    return dict(sorted(found.items(), key=lambda group: _order(group[0][0])))


def assemble(m: Measurements, plan: Plan, settings: Settings) -> tuple[tuple[Workload, ...], tuple[str, ...]]:
    """The workloads found by discovery, sized; and notes on what could not be measured."""
    index = _Index(m)
    grouped = groups(m)
    siblings = _siblings(index, grouped)
    built = tuple(
        _workload(index, key, guessed, members, plan, settings, siblings) for (key, guessed), members in grouped.items()
    )
    return built, _notes(m, built)


def needs_before(m: Measurements, plan: Plan) -> tuple[tuple[tuple[str, str], ...], float]:
    """The pods whose workload saw no model load in the window but has a run that started before it, and
    the earliest such start: the load question to ask of the data before the window (queries.before_window)."""
    index = _Index(m)
    start = plan.at - plan.window_s
    pods: set[tuple[str, str]] = set()
    earliest = math.inf
    for (_, _), members in groups(m).items():
        keys = set(members)
        if _max(index.images("ram_load_peak", keys).values()) is not None:
            continue
        for run in _runs(index, keys, start):
            if run.before and run.started is not None:
                pods.add((run.key[1], run.key[2]))
                earliest = min(earliest, run.started)
    return tuple(sorted(pods)), (earliest if pods else 0.0)


def _order(key: Key) -> tuple[str, ...]:
    return (key.cluster, key.namespace, key.kind, key.name, key.container)


@dataclass(frozen=True)
class _Run:
    key: RunKey
    peak: float | None
    started: float | None  # None: unknown (no cAdvisor start for it)
    before: bool


def _runs(index: _Index, keys: set[ContainerKey], window_start: float) -> list[_Run]:
    """The runs (cgroups) of these containers in the window, with their peak and start. Where cAdvisor gives
    no start, kube-state-metrics' earliest start in the window dates one run of the container (which one
    is not in its data; it only matters to the backtest's count of runs that started before the window)."""
    peaks: dict[RunKey, float] = {}
    for (*run, _image), value in index.images("run_peak", keys).items():
        run_key = tuple(run)
        peaks[run_key] = max(peaks.get(run_key, value), value)  # type: ignore[index]
    pods = {k[:3] for k in keys}
    starts = {k[:5]: v for k, v in index.rows("run_start", pods) if k[:4] in keys}
    ksm = {k[:4]: v for k, v in index.rows("ksm_first_start", pods) if k[:4] in keys}
    out = []
    dated: set[ContainerKey] = set()
    for run_key in sorted(peaks):
        started = starts.get(run_key)
        container = run_key[:4]
        if started is None and container in ksm and container not in dated:
            started = ksm[container]
            dated.add(container)  # type: ignore[arg-type]
        before = started is not None and started < window_start
        out.append(_Run(run_key, peaks[run_key], started, before))  # type: ignore[arg-type]
    return out


def _models(index: _Index, pods: set[PodKey]) -> tuple[str, ...]:
    return tuple(sorted({k[3] for k, _ in index.rows("models", pods) if k[3]}))


def _current_images(index: _Index, keys: set[ContainerKey]) -> set[str]:
    """The images the workload runs at the end of the window (all it ran, when none runs then)."""
    alive = {k for k in keys if k in index.m.rows.get("ram_now", {})}
    images = {k[-1] for k in index.images("run_peak", alive or keys)}
    return images or {k[-1] for k in index.images("ram_points", keys)}


_Sibling = tuple[str, str, tuple[str, ...]]  # container name, image, models


def _siblings(index: _Index, grouped: dict[Group, list[ContainerKey]]) -> dict[_Sibling, list[tuple[float, Key]]]:
    """Model-load peaks seen in the window, by container name, image and served models: what a workload of
    the same image serving the same models loads (workloads with no engine metrics name no model: none)."""
    found: dict[_Sibling, list[tuple[float, Key]]] = defaultdict(list)
    for (key, _), members in grouped.items():
        keys = set(members)
        models = _models(index, {k[:3] for k in members})
        if not models:
            continue
        per_image: dict[str, float] = {}
        for k, value in index.images("ram_load_peak", keys).items():
            per_image[k[-1]] = max(per_image.get(k[-1], value), value)
        for image, value in per_image.items():
            found[(key.container, image, models)].append((value, key))
    return found


def _load(
    index: _Index, key: Key, keys: set[ContainerKey], runs: list[_Run], siblings: dict[_Sibling, list[tuple[float, Key]]]
) -> tuple[Load, dict[RunKey, float]]:
    """The load peak the limit is sized from, and the measured load of each run before the window."""
    observed = _max(index.images("ram_load_peak", keys).values())
    measured: dict[RunKey, float] = {}
    for (*run, _image), value in index.images("load_before_window", keys).items():
        run_key = tuple(run)
        measured[run_key] = max(measured.get(run_key, value), value)  # type: ignore[index]
    if observed is not None:
        return Load(observed, LoadSource.OBSERVED), measured
    candidates: list[tuple[float, LoadSource, str]] = []
    for run in runs:
        if run.key in measured:
            started = f"started {_when(run.started)}" if run.started else "started before the window"
            candidates.append((measured[run.key], LoadSource.BEFORE, f"{run.key[2]}, {started}"))
    models = _models(index, {k[:3] for k in keys})
    if models:
        for image in sorted(_current_images(index, keys)):
            for value, other in siblings.get((key.container, image, models), []):
                if other != key:
                    candidates.append((value, LoadSource.SIBLING, other.title))
    if not candidates:
        return Load(None, LoadSource.UNSEEN), measured
    value, source, detail = max(candidates, key=lambda c: (c[0], c[2]))
    return Load(value, source, detail), measured


def _history(index: _Index, keys: set[ContainerKey], runs: list[_Run], load: Load, measured: dict[RunKey, float]) -> backtest.History:
    def days(name: str) -> dict[float, float]:
        out: dict[float, float] = defaultdict(float)
        for container in keys:
            for day, value in index.m.days.get(name, {}).get(container, {}).items():
                out[day] = value + out[day] if name == "day_oom_kills" else max(out[day], value)
        return dict(out)

    kills: dict[tuple[str, ...], int] = {}
    for container in keys:
        total = sum(index.m.days.get("day_oom_kills", {}).get(container, {}).values())
        if round(total):
            kills[container] = int(round(total))
    replayed = tuple(
        backtest.Run(
            container=run.key[:4],
            peak=run.peak,
            before=run.before,
            load_before=measured.get(run.key, load.peak) if run.before else None,
        )
        for run in runs
    )
    return backtest.History(
        runs=replayed,
        kills=kills,
        usage_at_kill=_max(index.container("oom_limit", keys)) if kills else None,
        day_peaks=days("day_peak"),
        day_p99s=days("day_p99"),
        day_kills={day: int(round(v)) for day, v in days("day_oom_kills").items() if round(v)},
    )


def _workload(
    index: _Index,
    key: Key,
    guessed: bool,
    members: list[ContainerKey],
    plan: Plan,
    settings: Settings,
    siblings: dict[_Sibling, list[tuple[float, Key]]],
) -> Workload:
    keys = set(members)
    pods = {k[:3] for k in members}
    alive = {k for k in keys if k in index.m.rows.get("ram_now", {})}
    alive_pods = {k[:3] for k in alive}
    runs = _runs(index, keys, plan.at - plan.window_s)
    load, measured = _load(index, key, keys, runs, siblings)
    history = _history(index, keys, runs, load, measured)
    memory, confidence, replayed = _memory(index, key, keys, alive, plan, settings, load, history)
    sized = confidence.level is not Level.NONE
    gpu, knobs = _engine(index, pods, alive_pods or pods, settings, sized)
    fragmentation = _max(index.pod("cuda_fragmentation_p99", pods))
    retries = _sum(index.pod("cuda_alloc_retries", pods))
    env = sizing.allocator_env(fragmentation, retries, settings.fragmentation_high) if sized else None
    releases = _releases(index, keys, settings)
    return Workload(
        key=key,
        owner_guessed=guessed,
        models=_models(index, pods),
        images=tuple(r.image for r in releases),
        pods=len(pods),
        memory=memory,
        gpu=gpu,
        knobs=knobs,
        env=(env,) if env else (),
        releases=releases,
        confidence=confidence,
        alive=bool(alive),
        backtest=replayed,
        history=history,
    )


def _memory(
    index: _Index,
    key: Key,
    keys: set[ContainerKey],
    alive: set[ContainerKey],
    plan: Plan,
    settings: Settings,
    load: Load,
    history: backtest.History,
) -> tuple[Memory, Confidence, Backtest | None]:
    def peak(name: str) -> float | None:
        return _max(index.images(name, keys).values())

    observed, serving, p99, traffic = (peak(n) for n in ("ram_load_peak", "ram_serving_peak", "ram_serving_p99", "ram_traffic_peak"))
    window_peak = _max(r.peak for r in history.runs)
    split = observed is not None or serving is not None
    if not split:  # no start time known: the whole window stands in for serving
        serving, p99 = window_peak, peak("ram_p99")
    points = int(sum(index.images("ram_points", keys).values()))
    first = list(index.images("ram_first_seen", keys).values())
    span = plan.at - min(first) if first else 0.0
    restarts = int(round(sum(index.container("restarts", keys))))
    oom_kills = sum(history.kills.values())
    current_limit = _max(index.container("limit_now", alive))
    current_request = _max(index.container("request_now", alive))
    # A workload no pod of which ran at the end has no current limit to judge: never "no limit".
    ksm = key.cluster in {k[0] for k in index.m.rows.get("ksm_present", {})}
    limits_known = bool(alive) and (ksm or current_limit is not None)
    highest = _max((load.peak, serving, window_peak))
    usage_at_kill = (history.usage_at_kill or highest) if oom_kills else None
    confidence = _confidence(points, span, restarts, load.source, split, plan, settings)
    risk, ratio = sizing.host_risk(highest, current_limit, oom_kills, limits_known)
    if confidence.level is Level.NONE:
        computed_limit = computed_request = limit = request = None
        limit_rule = request_rule = limit_note = request_note = "not enough data"
        limit_decision = request_decision = Decision.NONE
    else:
        computed_limit, limit_rule = sizing.memory_limit(highest, usage_at_kill)
        limit_decision, limit, limit_note = sizing.decide_limit(computed_limit, current_limit, risk, load.peak is not None)
        computed_request, request_rule = sizing.memory_request(p99, computed_limit)
        in_force = limit if limit is not None else current_limit
        request_decision, request, request_note = sizing.decide_request(computed_request, current_request, in_force, limits_known)
    replayed = None
    if confidence.points:
        replayed = backtest.replay(
            history, limit if limit is not None else current_limit, request if request is not None else current_request
        )
        if replayed.kills and limit_decision is Decision.CHANGE:  # never: the rules size above every sample
            limit_note = f"withheld: {sentence(replayed, sizing.quantity(limit))}"  # type: ignore[arg-type]
            limit_decision, limit = Decision.NONE, None
            request_decision, request, request_note = sizing.decide_request(
                computed_request, current_request, current_limit, limits_known
            )
    memory = Memory(
        load_peak=observed,
        serving_peak=serving,
        serving_p99=p99,
        traffic_peak=traffic,
        window_peak=window_peak,
        split=split,
        load=load,
        oom_kills=oom_kills,
        usage_at_kill=usage_at_kill,
        current_request=current_request,
        current_limit=current_limit,
        computed_request=computed_request,
        computed_limit=computed_limit,
        request=request,
        limit=limit,
        request_decision=request_decision,
        limit_decision=limit_decision,
        request_rule=request_rule,
        limit_rule=limit_rule,
        risk=risk,
        peak_to_limit=ratio,
        limit_note=limit_note,
        request_note=request_note,
    )
    return memory, confidence, replayed


def _confidence(
    points: int, span: float, restarts: int, load: LoadSource, split: bool, plan: Plan, settings: Settings
) -> Confidence:
    if points == 0:
        why = "no cAdvisor working set: is cAdvisor scraped, and does the image match vllm_containers.image_regex?"
        return Confidence(Level.NONE, 0, 0.0, restarts, (why,))
    return sizing.confidence(points, span, restarts, settings.min_history_s, plan.window_s, load, split)


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


def _measured_only(knob: Knob) -> Knob:
    """Not enough data: the measurements stay, the advice goes."""
    return Knob(knob.flag, knob.current, knob.current_note, None, "not enough data: measured only", False, knob.measured)


def _engine(
    index: _Index, pods: set[PodKey], current_pods: set[PodKey], settings: Settings, sized: bool
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
    utilization = sizing.utilization(config["utilization"], ratio, verdict) if sized else None  # type: ignore[arg-type]

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
    if not sized:
        knobs = [_measured_only(k) for k in knobs]
    projected = None
    if utilization is not None and ratio is not None and config["utilization"] is not None:
        projected = ratio + utilization - config["utilization"]  # type: ignore[operator]
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
        advice=_advice(verdict, config["utilization"], utilization, ratio, kv_peak, kv_p99, preemptions, waiting_share, knobs)  # type: ignore[arg-type]
        if sized
        else (),
        projected_peak_ratio=projected,
    )
    return gpu, tuple(knobs)


def _advice(
    verdict: KVVerdict,
    current: float | None,
    utilization: float | None,
    ratio: float | None,
    kv_peak: float | None,
    kv_p99: float | None,
    preemptions: float | None,
    waiting_share: float | None,
    knobs: list[Knob],
) -> tuple[str, ...]:
    out = []
    projected = ratio + utilization - current if None not in (ratio, utilization, current) else None  # type: ignore[operator]
    after = f"; with it the framebuffer would have peaked at {projected:.0%}" if projected is not None else ""
    if ratio is not None and ratio > sizing.FB_DANGER and utilization is not None:
        out.append(
            f"framebuffer peaked at {ratio:.0%}: lower --gpu-memory-utilization to {utilization:.2f} (CUDA "
            f"out-of-memory risk{after})"
        )
    if verdict is KVVerdict.TOO_SMALL:
        why = []
        if preemptions:
            why.append(f"{preemptions:.0f} preemptions")
        if kv_p99 is not None and kv_p99 >= sizing.KV_FULL:
            why.append(f"KV cache p99 {kv_p99:.0%}")
        if waiting_share and waiting_share >= sizing.WAIT_SHARE:
            why.append(f"requests waited for capacity {waiting_share:.1%} of the time")
        out.append("KV cache too small (" + ", ".join(why) + ")")
        if utilization is not None and ratio is not None and ratio <= sizing.FB_DANGER:
            out.append(f"raise --gpu-memory-utilization to {utilization:.2f} (the framebuffer peaked at {ratio:.0%}{after})")
        long_context = next((k for k in knobs if k.flag == "--max-model-len" and k.change), None)
        if long_context is not None:
            out.append(f"lower --max-model-len to {long_context.recommended:.0f}: rare long requests hold the cache")
        if any(k.flag == sizing.PREFIX_FLAG and k.change for k in knobs):
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
    if m.dropped:
        notes.append(
            f"{m.dropped} values were infinite, negative or absurdly large (a memory over 1 PiB) and were left out"
        )
    return tuple(notes)

