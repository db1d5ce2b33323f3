"""Every question `obspack rightsize` asks, as PromQL: one query per quantity for the whole fleet.

Most are instant queries evaluated once, at the end of the window, returning one row per container, run
(cgroup), pod, or pod and bucket: range functions over the window (`max_over_time(x[14d])`) where the raw
series answer directly, subqueries at a coarse step (`[14d:15m]`) where each step must be classified first.
A few are range queries with a one-day step (the backtest's days), and one optional question looks at the
data before the window (the model load of containers that started before it). Their number does not grow
with the fleet (docs/benchmarks.md measures them at 1,000 pods).

Model load and serving. A step whose window holds a sample from the first `load` seconds after its
container started is load; the steps after it are serving. So load covers the first `load` seconds rounded
up to the step (10 minutes after a start, 15-minute steps: 10 to 25 minutes), and serving starts right after;
each step reads the highest sample in it (`max_over_time(x[step])`), so a spike between steps is not lost.
The start is read over the same step window as the samples (`min_over_time` for serving, `max_over_time` for
load), never as an instant: a cgroup's series stop a scrape after the kernel kills it (Prometheus marks them
stale), so an instant read at the next step would find no start and the run's last minutes, the climb to a
kill or a restart, would count as neither. Where every run of a container shares one start series
(kube-state-metrics' `kube_pod_container_state_started`, or cAdvisor scraped without its `id` label), the
step that holds a restart sees both starts and counts as both load and serving: nothing is lost.
cAdvisor's `container_start_time_seconds` of the same cgroup is the exact start (every run has its own
cgroup); kube-state-metrics' stands in for containers cAdvisor gives no start for. Containers with neither
are not told apart: their window-wide peak and p99 stand in for serving.

Sources are read as obspack's rules read them (rules/recording): vLLM engine series with the configured
selector and `model_name!=""` (production-stack's router re-exports some gauges without it), per-process
copies (`pid`) collapsed; cAdvisor without the pod cgroup and the pause sandbox (`container!=""`,
`container!="POD"`, `image!=""`, which also leaves out the kubelet's /metrics/resource copies);
kube-state-metrics HA replicas collapsed with `max by`; dcgm-exporter in any of its label modes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from obspack import conventions as c
from obspack import slos
from obspack.config import ObspackConfig, promql_string
from obspack.durations import format_ms
from obspack.rules.alerts.exporter import fragmentation_over_floor
from obspack.rules.recording import autoscaling as scaling
from obspack.rules.recording import dcgm, kubernetes, slo, vllm

MIB = 1048576  # DCGM reports the framebuffer in MiB
DAY = 86400
CONTAINER = ("namespace", "pod", "container")
RUN = (*CONTAINER, "id")  # one run of a container: cAdvisor's cgroup ("" where the id label is dropped)
POD = ("namespace", "pod")
MAX_SCOPE_CHARS = 4000  # a longer namespace regex is left out (VictoriaMetrics caps the query length)
MAX_BEFORE_S = 90 * DAY  # how far before the window a container's start is looked up, at most
MAX_BEFORE_STEPS = 3000
MAX_BYTES = 2.0**50  # 1 PiB: a container's memory above this is a broken sample, not a measurement
BYTES = ("ram_", "run_peak", "day_peak", "day_p99", "oom_limit", "limit_now", "request_now", "load_before", "fb_")
CACHE_CONFIG_LABELS = (
    "gpu_memory_utilization",
    "enable_prefix_caching",
    "kv_cache_size_tokens",
    "kv_cache_max_concurrency",
)
LWS_LABEL = "label_leaderworkerset_sigs_k8s_io_name"  # kube_pod_labels, when the label is allowlisted


@dataclass(frozen=True)
class Plan:
    """The window and the resolution of the questions."""

    at: float  # end of the window, unix seconds
    window_s: int
    step_s: int
    load_s: int
    namespaces: tuple[str, ...] = ()  # scope for kube-state-metrics (the namespaces that run vLLM)
    starts: tuple[str, ...] = ("cadvisor", "kube_state_metrics")  # where containers' start times come from

    @property
    def window(self) -> str:
        return format_ms(self.window_s * 1000)

    @property
    def step(self) -> str:
        return format_ms(self.step_s * 1000)


@dataclass(frozen=True)
class Query:
    name: str
    expr: str
    keys: tuple[str, ...]  # the labels that tell rows apart, the cluster label first
    at: float | None = None  # evaluated at this time instead of the end of the window
    every_s: int = 0  # a range query over the window, one point every this many seconds ending at the end of it

    @property
    def days(self) -> bool:
        return self.every_s == DAY
    most: float = 2.0**53  # values above this are nonsense (a broken exporter's) and are left out

    def __post_init__(self) -> None:
        if self.name.startswith(BYTES):
            object.__setattr__(self, "most", MAX_BYTES)


def _each(legs: list[str], read: Callable[[str], str] = lambda leg: leg) -> str:
    """`read` over each selector leg, joined with `or` (a range selector cannot hold an `or`)."""
    if len(legs) == 1:
        return read(legs[0])
    return "(" + " or ".join(read(leg) for leg in legs) + ")"


def _namespace_scope(namespaces: tuple[str, ...]) -> str:
    if not namespaces:
        return ""
    alternatives = "|".join(_regex_literal(n) for n in sorted(set(namespaces)))
    matcher = f"namespace=~{promql_string(alternatives)}"
    return matcher if len(matcher) <= MAX_SCOPE_CHARS else ""


def _regex_literal(text: str) -> str:
    return "".join(f"\\{ch}" if ch in ".^$*+?()[]{}|\\" else ch for ch in text)


def _pod_scope(pods: tuple[tuple[str, str], ...]) -> str:
    """`namespace=~..., pod=~...` for these pods (a superset when names repeat across namespaces), or ""
    when the regex would be too long for a query (then every vLLM container is read)."""
    if not pods:
        return ""
    names = "|".join(_regex_literal(p) for p in sorted({p for _, p in pods}))
    matcher = f"pod=~{promql_string(names)}"
    scope = _namespace_scope(tuple(ns for ns, _ in pods))
    return ", ".join(m for m in (scope, matcher) if m) if len(matcher) <= MAX_SCOPE_CHARS else ""


class Fleet:
    """The selectors of one config and plan, and the expressions every question is built from."""

    def __init__(self, cfg: ObspackConfig, plan: Plan, cadvisor_scope: str = "") -> None:
        self.cfg = cfg
        self.plan = plan
        self.cadvisor_scope = cadvisor_scope  # extra matchers for cAdvisor (the pods a question is about)
        self.cl = cfg.cluster_label
        ksm = cfg.selectors.kube_state_metrics
        scope = _namespace_scope(plan.namespaces)
        self.ksm = c.selector(ksm, scope)
        self.ksm_memory = c.selector(ksm, scope, 'resource="memory"')
        self.ksm_oom = c.selector(ksm, scope, 'reason="OOMKilled"')
        self.ksm_lws = c.selector(ksm, scope, f'{LWS_LABEL}!=""')
        self.exporter = c.selector(cfg.selectors.exporter)
        self.container = c.by(cfg, *CONTAINER)
        self.run = c.by(cfg, *RUN)
        self.pod = c.by(cfg, *POD)
        self.image = c.by(cfg, *CONTAINER, "image")

    def over_window(self, fn: str, x: str, *args: str, step: str = "") -> str:
        """`fn` over a subquery of `x` at the plan's step (or `step`) across the window."""
        head = "".join(f"{a}, " for a in args)
        return f"{fn}({head}(\n{x}\n)[{self.plan.window}:{step or self.plan.step}])"

    # -- cAdvisor, vLLM containers only ----------------------------------------------------------------

    def cadvisor(self, metric: str) -> list[str]:
        """The metric for containers whose image (or, if configured, name) marks them as vLLM."""
        base = (self.cfg.selectors.cadvisor, kubernetes.HAS_CONTAINER, kubernetes.NOT_PAUSE, 'image!=""', self.cadvisor_scope)
        legs = [metric + c.selector(*base, f"image=~{promql_string(self.cfg.vllm_containers.image_regex)}")]
        if self.cfg.vllm_containers.name_regex:
            name = promql_string(self.cfg.vllm_containers.name_regex)
            legs.append(metric + c.selector(*base, f"container=~{name}"))
        return legs

    def working_set(self, read: Callable[[str], str] = lambda leg: leg) -> str:
        return _each(self.cadvisor("container_memory_working_set_bytes"), read)

    def start(self, read: Callable[[str], str] = lambda leg: leg) -> str:
        return _each(self.cadvisor("container_start_time_seconds"), read)

    def step_peak(self) -> str:
        """Per cgroup, the highest working set since the previous step."""
        return self.working_set(lambda leg: f"max_over_time({leg}[{self.plan.step}])")

    def with_start(self) -> str:
        """Containers cAdvisor gives a start for in the window: evaluated once (`@` the end), not per step."""
        seen = self.start(lambda leg: f"last_over_time({leg}[{self.plan.window}] @ {self.plan.at:.3f})")
        return f"group by ({self.container}) ({seen})"

    def _split(self, x: str, serving: bool) -> str:
        """The samples of `x` (per cgroup) whose step is serving, or else load, from the start sources the
        fleet has (`Plan.starts`). The start is read over the step's own window, like the samples: the
        oldest start in it decides serving, the newest load, so a step that holds a restart of a shared start
        series is both, and a run's last step before a kill still finds its start. It is compared with
        `time() - n`, not subtracted from time(), so no label set is rebuilt at every step."""
        n = self.plan.load_s + self.plan.step_s
        op, fn = ("<=", "min_over_time") if serving else (">", "max_over_time")
        step = self.plan.step
        legs = []
        if "cadvisor" in self.plan.starts:
            start = self.start(lambda leg: f"{fn}({leg}[{step}])")
            legs.append(f"(({x}) and ({start} {op} time() - {n}))")
        if "kube_state_metrics" in self.plan.starts:
            alone = "cadvisor" not in self.plan.starts
            unstarted = f"({x})" if alone else f"(({x}) unless on ({self.container}) {self.with_start()})"
            started = f"max by ({self.container}) ({fn}(kube_pod_container_state_started{self.ksm}[{step}]))"
            legs.append(f"({unstarted}\n  and on ({self.container}) ({started} {op} time() - {n}))")
        return "\nor\n".join(legs)

    def load(self, x: str) -> str:
        return self._split(x, serving=False)

    def serving(self, x: str) -> str:
        return self._split(x, serving=True)

    def running(self) -> str:
        """Engines with a request running within the step (joined on the pod: `and` takes any of them)."""
        return f"(max_over_time(vllm:num_requests_running{vllm.sel(self.cfg)}[{self.plan.step}]) > 0)"

    # -- the GPU plane ---------------------------------------------------------------------------------

    def framebuffer(self, metric: str, read: Callable[[str], str]) -> str:
        return dcgm.normalised(self.cfg, metric, read)


# ---------------------------------------------------------------------------------------------------------
# Which containers run vLLM, and whose they are


def discovery(cfg: ObspackConfig, plan: Plan) -> list[Query]:
    """Every container that ran vLLM in the window, by the marks the rules use (image, name, engine
    metrics); and how many of them cAdvisor gives a start time for, and not (which start sources to read)."""
    legs = kubernetes.vllm_source_selectors(cfg, with_container=True)
    seen = "\n  or\n  ".join(f"last_over_time({leg}[{plan.window}])" for leg in legs)
    f = Fleet(cfg, plan)
    measured = f"group by ({f.container}) ({f.working_set(lambda leg: f'last_over_time({leg}[{plan.window}])')})"
    started = f"group by ({f.container}) ({f.start(lambda leg: f'last_over_time({leg}[{plan.window}])')})"
    return [
        Query("containers", f"group by ({f.container}) (\n  {seen}\n)", (cfg.cluster_label, *CONTAINER)),
        Query("started_by_cadvisor", f"count({started})", ()),
        Query("not_started_by_cadvisor", f"count({measured} unless on ({f.container}) {started})", ()),
    ]


def tried(cfg: ObspackConfig) -> list[str]:
    """The selectors discovery looks for vLLM containers with (said when it finds none)."""
    return kubernetes.vllm_source_selectors(cfg, with_container=True)


def namespaces(containers: Mapping[tuple[str, ...], float]) -> tuple[str, ...]:
    """The namespaces of the containers discovery found (kube-state-metrics questions are scoped to them)."""
    return tuple(sorted({k[1] for k in containers if len(k) > 1 and k[1]}))


def owners(f: Fleet) -> list[Query]:
    w, cl = f.plan.window, f.cl
    replicaset = c.by(f.cfg, "namespace", "replicaset")
    return [
        Query(
            "pod_owner",
            f"max by ({f.pod}, owner_kind, owner_name) (last_over_time(kube_pod_owner{f.ksm}[{w}]))",
            (cl, *POD, "owner_kind", "owner_name"),
        ),
        Query(
            "replicaset_owner",
            f"max by ({replicaset}, owner_kind, owner_name) (last_over_time(kube_replicaset_owner{f.ksm}[{w}]))",
            (cl, "namespace", "replicaset", "owner_kind", "owner_name"),
        ),
        Query(
            "leaderworkerset",
            f"max by ({f.pod}, {LWS_LABEL}) (last_over_time(kube_pod_labels{f.ksm_lws}[{w}]))",
            (cl, *POD, LWS_LABEL),
        ),
        Query(
            "models",
            f"group by ({f.pod}, model_name) (last_over_time(vllm:num_requests_running{vllm.sel(f.cfg)}[{w}]))",
            (cl, *POD, "model_name"),
        ),
    ]


# ---------------------------------------------------------------------------------------------------------
# Host memory


OOM_STEP = "1h"  # OOM kills are rare: restarts are looked for hour by hour


def host_memory(f: Fleet) -> list[Query]:
    """Host RAM per container, run and image. OOM kills: the restart count went up within an hour and the
    last termination reason then was OOMKilled (the reason alone is sticky); the limit at that hour."""
    w, cl = f.plan.window, f.cl
    peak = f.step_peak()
    images = (cl, *CONTAINER, "image")
    containers = (cl, *CONTAINER)
    counter = f"kube_pod_container_status_restarts_total{f.ksm}"
    restarted = f"((max by ({f.container}) ({counter}) - max by ({f.container}) ({counter} offset {OOM_STEP})) > 0)"
    oom = f"max by ({f.container}) (kube_pod_container_status_last_terminated_reason{f.ksm_oom})"
    killed = f"{restarted}\nand on ({f.container}) {oom}"
    limit = f"max by ({f.container}) (kube_pod_container_resource_limits{f.ksm_memory})"
    limit_at_kill = f"{limit}\nand on ({f.container}) {killed}"
    under_traffic = f"({f.serving(peak)})\nand on ({f.pod}) {f.running()}"
    spec_limit = _each(f.cadvisor("container_spec_memory_limit_bytes"))
    count = f.working_set(lambda leg: f"count_over_time({leg}[{w}])")
    split = [
        Query("ram_load_peak", f"max by ({f.image}) ({f.over_window('max_over_time', f.load(peak))})", images),
        Query("ram_serving_peak", f"max by ({f.image}) ({f.over_window('max_over_time', f.serving(peak))})", images),
        Query(
            "ram_serving_p99",
            f"max by ({f.image}) ({f.over_window('quantile_over_time', f.serving(peak), '0.99')})",
            images,
        ),
        Query("ram_traffic_peak", f"max by ({f.image}) ({f.over_window('max_over_time', under_traffic)})", images),
    ]
    ksm_start = (
        [
            Query(
                "ksm_first_start",
                f"min by ({f.container}) (min_over_time(kube_pod_container_state_started{f.ksm}[{w}]))",
                containers,
            )
        ]
        if "kube_state_metrics" in f.plan.starts
        else []
    )
    return [
        *(split if f.plan.starts else []),
        Query("ram_points", f"sum by ({f.image}) ({count})", images),
        Query(
            "ram_first_seen",  # at an hour's resolution: it only dates the data and orders the images
            f"min by ({f.image}) (min_over_time((0 * {f.working_set()} + time())[{w}:1h]))",
            images,
        ),
        # Each run (cgroup) whole: its highest sample and its start, for the backtest and the window's peak.
        Query(
            "run_peak",
            f"max by ({f.run}, image) ({f.working_set(lambda leg: f'max_over_time({leg}[{w}])')})",
            (cl, *RUN, "image"),
        ),
        Query("run_start", f"min by ({f.run}) ({f.start(lambda leg: f'last_over_time({leg}[{w}])')})", (cl, *RUN)),
        *ksm_start,
        Query(
            "ram_p99",
            f"max by ({f.image}) ({f.working_set(lambda leg: f'quantile_over_time(0.99, {leg}[{w}])')})",
            images,
        ),
        Query("ram_now", f"max by ({f.container}) ({f.working_set()})", containers),
        Query("restarts", f"max by ({f.container}) (increase({counter}[{w}]))", containers),
        Query(
            "oom_limit",
            f"max by ({f.container}) ({f.over_window('max_over_time', limit_at_kill, step=OOM_STEP)})",
            containers,
        ),
        Query("limit_now", f"{limit}\nor\nmax by ({f.container}) ({spec_limit} > 0)", containers),
        Query(
            "request_now",
            f"max by ({f.container}) (kube_pod_container_resource_requests{f.ksm_memory})",
            containers,
        ),
        Query("ksm_present", f"count by ({c.by(f.cfg)}) (kube_pod_container_resource_limits{f.ksm})", (cl,)),
        # The backtest's days: one point a day, each reading the day before it.
        Query(
            "day_peak",
            f"max by ({f.container}) ({f.working_set(lambda leg: f'max_over_time({leg}[1d])')})",
            containers,
            every_s=DAY,
        ),
        Query(
            "day_p99",
            f"max by ({f.container}) ({f.working_set(lambda leg: f'quantile_over_time(0.99, {leg}[1d])')})",
            containers,
            every_s=DAY,
        ),
        Query(
            "day_oom_kills",
            f"sum by ({f.container}) (sum_over_time((\n{killed}\n)[1d:{OOM_STEP}]))",
            containers,
            every_s=DAY,
        ),
    ]


def before_window(cfg: ObspackConfig, plan: Plan, pods: tuple[tuple[str, str], ...], earliest: float) -> Query | None:
    """The model load of runs that started before the window, while the backend still holds it: the load
    question, evaluated at the window's start over the time back to the earliest such start (at most
    MAX_BEFORE_S), for these pods only. None when the earliest start is further back than that."""
    start = plan.at - plan.window_s
    back = start - earliest + plan.load_s + plan.step_s
    if earliest <= 0 or back <= 0 or back > MAX_BEFORE_S + plan.load_s + plan.step_s:
        return None
    step = max(plan.step_s, math.ceil(back / MAX_BEFORE_STEPS / 60) * 60)
    back = math.ceil(back / step) * step
    earlier = Plan(at=start, window_s=int(back), step_s=step, load_s=plan.load_s, namespaces=plan.namespaces, starts=plan.starts)
    f = Fleet(cfg, earlier, cadvisor_scope=_pod_scope(pods))
    expr = f"max by ({f.run}, image) ({f.over_window('max_over_time', f.load(f.step_peak()))})"
    return Query("load_before_window", expr, (cfg.cluster_label, *RUN, "image"), at=start)


# ---------------------------------------------------------------------------------------------------------
# GPU memory and the KV cache


def _kv(f: Fleet, fn: str, *args: str) -> str:
    """A range function of the KV cache usage per engine (its 0.9.2 name, else the older one), max per pod."""
    head = "".join(f"{a}, " for a in args)
    legs = [f"{fn}({head}{metric}{vllm.sel(f.cfg)}[{f.plan.window}])" for metric in vllm.KV_USAGE]
    return f"max by ({f.pod}) (\n  " + "\n  or\n  ".join(legs) + "\n)"


def gpu(f: Fleet) -> list[Query]:
    """The framebuffer over the window per pod: its peak and its median (vLLM preallocates the KV cache at
    start, so the median is the serving level and a peak above it came at load or from a spike). Split per
    step like host memory, DCGM's label normalisation would cost seconds per hundred pods."""
    w, cl = f.plan.window, f.cl
    used = f.framebuffer("DCGM_FI_DEV_FB_USED", lambda leg: f"last_over_time({leg}[{w}])")
    free = f.framebuffer("DCGM_FI_DEV_FB_FREE", lambda leg: f"last_over_time({leg}[{w}])")
    peak = f.framebuffer("DCGM_FI_DEV_FB_USED", lambda leg: f"max_over_time({leg}[{w}])")
    median = f.framebuffer("DCGM_FI_DEV_FB_USED", lambda leg: f"quantile_over_time(0.5, {leg}[{w}])")
    by_reason = "vllm:num_requests_waiting_by_reason" + vllm.sel(f.cfg, 'reason="capacity"')
    waiting = "vllm:num_requests_waiting" + vllm.sel(f.cfg)
    # The share of steps with waits, per engine (no aggregation at each step: cheap), the highest engine per
    # pod; all waiting requests for pods whose vLLM predates the reasons (0.20).
    share = (
        f"max by ({f.pod}) ({f.over_window('avg_over_time', by_reason + ' > bool 0')})\n"
        f"or on ({f.pod})\nmax by ({f.pod}) ({f.over_window('avg_over_time', waiting + ' > bool 0')})"
    )
    config = c.selector(f.cfg.selectors.vllm)  # cache_config_info has no model_name
    pods = (cl, *POD)
    return [
        Query("fb_peak", f"max by ({f.pod}) (\n{peak}\n) * {MIB}", pods),
        Query("fb_median", f"max by ({f.pod}) (\n{median}\n) * {MIB}", pods),
        Query("fb_total", f"max by ({f.pod}) (\n{used}\n+\n{free}\n) * {MIB}", pods),
        Query(
            "cache_config",
            f"max by ({f.pod}, {', '.join(CACHE_CONFIG_LABELS)}) "
            f"(last_over_time(vllm:cache_config_info{config}[1h]))",
            (*pods, *CACHE_CONFIG_LABELS),
        ),
        Query("kv_peak", _kv(f, "max_over_time"), pods),
        Query("kv_p99", _kv(f, "quantile_over_time", "0.99"), pods),
        Query(
            "preemptions",
            f"{vllm.counter_rate(f.cfg, ('vllm:num_preemptions_total',), w, POD)} * {f.plan.window_s}",
            pods,
        ),
        Query(
            "waiting_peak",
            f"max by ({f.pod}) (max_over_time({by_reason}[{w}]))\nor\nmax by ({f.pod}) (max_over_time({waiting}[{w}]))",
            pods,
        ),
        Query("waits_by_reason", f"group by ({f.pod}) (last_over_time({by_reason}[{w}]))", pods),
        Query("waiting_share", share, pods),
    ]


# ---------------------------------------------------------------------------------------------------------
# vLLM's knobs


def knobs(f: Fleet) -> list[Query]:
    w, cl = f.plan.window, f.cl
    running = f"vllm:num_requests_running{vllm.sel(f.cfg)}"
    # the allocator's fragmentation counted only at the moments its split blocks reach the alert's floor
    fragmented = fragmentation_over_floor(f.cfg, lambda metric: metric + f.exporter)

    def histogram(name: str, family: str) -> Query:
        """Observations per bucket over the window (rate x window: the increase, extrapolated alike)."""
        rate = vllm.counter_rate(f.cfg, (f"{family}_bucket",), w, (*POD, "le"))
        return Query(name, f"{rate} * {f.plan.window_s}", (cl, *POD, "le"))

    return [
        Query("running_peak", f"max by ({f.pod}) (max_over_time({running}[{w}]))", (cl, *POD)),
        histogram("prompt_tokens", "vllm:request_prompt_tokens"),
        histogram("generation_tokens", "vllm:request_generation_tokens"),
        histogram("iteration_tokens", "vllm:iteration_tokens_total"),
        Query("prefix_hits", vllm.prefix_hits_rate(f.cfg, w), (cl, *vllm.POD_MODEL)),
        Query("prefix_queries", vllm.prefix_queries_rate(f.cfg, w), (cl, *vllm.POD_MODEL)),
        Query(
            "cuda_fragmentation_p99",
            f"max by ({f.pod}) (quantile_over_time(0.99, (\n{fragmented}\n)[{w}:{f.plan.step}]))",
            (cl, *POD),
        ),
        Query(
            "cuda_alloc_retries",
            f"sum by ({f.pod}) (increase(obspack_cuda_alloc_retries_total{f.exporter}[{w}]))",
            (cl, *POD),
        ),
    ]


# ---------------------------------------------------------------------------------------------------------
# Autoscaling targets (`--autoscaling`): per model and step, what the saturation signal reads and whether the
# time-to-first-token SLO burned


def autoscaling(cfg: ObspackConfig, plan: Plan) -> list[Query]:
    """Range questions at the plan's step over the window, per cluster, namespace and model: the queue per
    engine and the KV cache usage as the signal's record reads them, the pods serving, and the slow and all
    first tokens per second over each step (the TTFT SLO's own bad and all events, each model with its
    settings). None without a TTFT SLO: there is nothing to place the targets against."""
    keep = (cfg.cluster_label, "namespace", "model_name")
    pods = vllm.unless_asleep(cfg, f"group by ({c.by(cfg, *vllm.POD_MODEL)}) (vllm:num_requests_running{vllm.sel(cfg)})")
    asked = [
        Query("scale_queue", scaling.queue_per_engine(cfg), keep, every_s=plan.step_s),
        Query("scale_kv", scaling.kv_cache(cfg), keep, every_s=plan.step_s),
        Query("scale_pods", f"count by ({c.by(cfg, 'namespace', 'model_name')}) (\n{pods}\n)", keep, every_s=plan.step_s),
    ]
    branches = slos.branches(cfg, "time_to_first_token") if cfg.slos.enabled else ()
    if branches:
        bad, every = zip(*(slo.latency_events(cfg, "time_to_first_token", b, plan.step) for b in branches))
        asked += [
            Query("scale_ttft_bad", "\nor\n".join(bad), keep, every_s=plan.step_s),
            Query("scale_ttft_all", "\nor\n".join(every), keep, every_s=plan.step_s),
        ]
    return asked


def measurements(cfg: ObspackConfig, plan: Plan) -> list[Query]:
    """Every question after discovery, scoped to the namespaces it found."""
    f = Fleet(cfg, plan)
    return [*owners(f), *host_memory(f), *gpu(f), *knobs(f)]
