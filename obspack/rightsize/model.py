"""What `obspack rightsize` found and recommends, as frozen records (the report and the JSON read these).

Sizes are bytes, times unix seconds, durations seconds, shares 0-1. `None` means not measured (the source
is missing or had nothing in the window), never zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

FB_DANGER = 0.97  # framebuffer use above this share of the card risks CUDA out-of-memory


class Risk(str, Enum):
    """How close the host-memory peaks came to the current limit."""

    OOM = "oom"  # the kernel OOM-killed the container in the window
    HIGH = "high"  # a peak reached 95% of the limit
    TIGHT = "tight"  # less headroom than the rule asks for
    OK = "ok"
    NO_LIMIT = "no limit"  # unbounded: the node's memory is the limit
    UNKNOWN = "unknown"  # no limit known (kube-state-metrics missing) or nothing measured


class KVVerdict(str, Enum):
    TOO_SMALL = "too small"  # preemptions, capacity waits or a KV cache near full
    FITS = "fits"
    IDLE = "mostly idle"  # the peak stayed under half the cache
    UNKNOWN = "unknown"


class Level(str, Enum):
    HIGH = "high"
    MEDIUM = "medium"  # sized, with the model load taken from another source (or the limit kept without it)
    LOW = "low"  # sized, but read the reasons: its patch is written only with --include-low
    NONE = "not enough data"  # measured values only, no advice of any kind


class LoadSource(str, Enum):
    """Where the model-load peak that sizes the limit comes from."""

    OBSERVED = "observed"  # a start of the workload's own containers inside the window
    BEFORE = "before the window"  # the start of a running container, before the window, still in the backend
    SIBLING = "same image and model"  # another workload's start inside the window, same image, model, container
    UNSEEN = "not seen"  # none: the limit is never lowered


class Decision(str, Enum):
    """What to do with a current request or limit."""

    CHANGE = "change"  # set the recommended value
    KEEP = "keep"  # the current value stays (within the tolerance, or lowering it is not safe)
    NONE = "none"  # nothing is said (not enough data, or nothing measured)


@dataclass(frozen=True)
class Key:
    """One workload's container: the owner (Deployment, StatefulSet, LeaderWorkerSet, ...) and the container."""

    cluster: str
    namespace: str
    kind: str
    name: str
    container: str

    @property
    def title(self) -> str:
        cluster = f"{self.cluster} " if self.cluster else ""
        return f"{cluster}{self.namespace}/{self.kind}/{self.name} [{self.container}]"


@dataclass(frozen=True)
class Confidence:
    level: Level
    points: int  # raw working-set samples in the window, over every pod
    span_s: float  # from the first sample in the window to the end
    restarts: int
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Load:
    """The model-load peak that sizes the limit, and where it comes from."""

    peak: float | None
    source: LoadSource
    detail: str = ""  # the sibling workload, or when the run started


@dataclass(frozen=True)
class Memory:
    """Host RAM of the container (cAdvisor working set, the figure the OOM killer acts on)."""

    load_peak: float | None  # the first minutes after each start in the window
    serving_peak: float | None  # after that, whatever the traffic
    serving_p99: float | None
    traffic_peak: float | None  # serving, while requests were running
    window_peak: float | None  # the highest sample of any run in the window, whatever its phase
    split: bool  # load and serving told apart (start times known); else serving = the whole window
    load: Load  # the load peak the limit is sized from
    oom_kills: int
    usage_at_kill: float | None  # the limit the container had when it was killed
    current_request: float | None
    current_limit: float | None
    computed_request: float | None  # what the rules give; None: not enough data or nothing measured
    computed_limit: float | None
    request: float | None  # the value to set: the computed one, or the current one where kept
    limit: float | None
    request_decision: Decision
    limit_decision: Decision
    request_rule: str
    limit_rule: str
    risk: Risk
    peak_to_limit: float | None
    limit_note: str = ""  # why the decision (raised, lowered, kept and why, withheld)
    request_note: str = ""

    @property
    def limit_change(self) -> bool:
        return self.limit_decision is Decision.CHANGE

    @property
    def request_change(self) -> bool:
        return self.request_decision is Decision.CHANGE

    @property
    def change(self) -> bool:
        return self.limit_change or self.request_change


@dataclass(frozen=True)
class Backtest:
    """The window's own samples replayed against a limit and a request: what they would have done."""

    limit: float | None
    request: float | None
    runs: int  # runs (cgroups) of the workload's containers in the window
    runs_killed: int  # runs whose working set reached the limit, or that the kernel killed at a limit as high
    loads_before: int  # runs that started before the window whose model load is counted (measured or inferred)
    loads_unknown: int  # runs that started before the window whose model load is unknown
    days: int  # days of the window with data
    days_killed: int
    days_over_request: int  # days whose working-set p99 was above the request
    peak: float | None  # the highest sample (or load before the window) replayed

    @property
    def kills(self) -> bool:
        return self.runs_killed > 0 or self.days_killed > 0

    @property
    def peak_ratio(self) -> float | None:
        if self.peak is None or not self.limit:
            return None
        return self.peak / self.limit


@dataclass(frozen=True)
class GPU:
    """GPU memory and the KV cache of the vLLM engines of the workload's pods."""

    framebuffer_total: float | None
    peak: float | None  # framebuffer used, highest in the window (at load, or a spike)
    median: float | None  # framebuffer used, median over the window: the serving level
    gpu_memory_utilization: float | None  # vllm:cache_config_info
    kv_peak: float | None
    kv_p99: float | None
    preemptions: float | None
    waiting_peak: float | None  # requests waiting for capacity (all waiting before vLLM 0.20)
    waiting_share: float | None  # share of the serving time with such waits
    waits_by_reason: bool  # waiting_by_reason{reason="capacity"} was there (vLLM 0.20+)
    verdict: KVVerdict
    recommended_utilization: float | None
    advice: tuple[str, ...] = ()
    projected_peak_ratio: float | None = None  # the framebuffer peak share with the recommended utilization

    @property
    def peak_ratio(self) -> float | None:
        if self.peak is None or not self.framebuffer_total:
            return None
        return self.peak / self.framebuffer_total


@dataclass(frozen=True)
class Run:
    """One run (cgroup: one start) of a container, as the backtest replays it."""

    container: tuple[str, ...]
    peak: float | None  # the highest sample in the window
    before: bool = False  # started before the window
    load_before: float | None = None  # its model load before the window: measured there, or inferred


@dataclass(frozen=True)
class History:
    """A workload's samples as the backtest reads them."""

    runs: tuple[Run, ...] = ()
    kills: Mapping[tuple[str, ...], int] = field(default_factory=dict)  # OOM kills in the window, per container
    usage_at_kill: float | None = None  # the (highest) limit in force at those kills
    day_peaks: Mapping[float, float] = field(default_factory=dict)  # day's end -> highest sample
    day_p99s: Mapping[float, float] = field(default_factory=dict)
    day_kills: Mapping[float, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Knob:
    """One vLLM argument: what it is, what traffic asks for, and why."""

    flag: str  # e.g. --max-model-len
    current: float | None
    current_note: str  # where the current value comes from, or why it is unknown
    recommended: float | str | None  # a number, "off", or None when nothing can be said
    basis: str  # the measurement behind it
    change: bool  # counts as a recommendation (the current value is known to differ, or traffic shows it)
    measured: tuple[tuple[str, float], ...] = ()  # the numbers behind `basis`, by name


@dataclass(frozen=True)
class Release:
    """Peaks of one image (vLLM version) of the workload, in the order the images appeared."""

    image: str
    first_seen: float
    pods: int
    load_peak: float | None
    serving_peak: float | None
    gpu_peak: float | None
    rises: tuple[tuple[str, float], ...] = ()  # (what, share) rises over the previous image
    flagged: bool = False


@dataclass(frozen=True)
class Saving:
    """What one recommendation does to the bill: the GPUs it frees (negative: adds) and the money a month at
    the configured prices (negative: costs more; None: the GPUs have no price)."""

    change: str
    gpus_freed: float
    per_month: float | None
    note: str = ""
    possible: bool = False  # a possibility to check, not a recommendation (a lower tensor-parallel degree)


@dataclass(frozen=True)
class WorkloadCost:
    """The workload's GPUs and what they cost a month at the configured prices (obspack/rightsize/prices.py)."""

    gpus_per_pod: float
    gpu_model: str  # DCGM's modelName ("" where only kube-state-metrics' requests were seen)
    hourly: float | None  # price of one GPU-hour; None: no price for this GPU model
    pods: int  # pods seen with GPUs
    per_month: float | None
    savings: tuple[Saving, ...] = ()


@dataclass(frozen=True)
class Workload:
    key: Key
    owner_guessed: bool  # no kube-state-metrics owner: the owner is read from the pod name
    models: tuple[str, ...]
    images: tuple[str, ...]
    pods: int
    memory: Memory
    gpu: GPU | None  # None: the container runs no vLLM engine that reports metrics
    knobs: tuple[Knob, ...]
    env: tuple[tuple[str, str, str], ...]  # (name, value, why)
    releases: tuple[Release, ...]
    confidence: Confidence
    alive: bool  # a pod of it ran at the end of the window
    backtest: Backtest | None = None  # the recommended (or kept) limit and request, replayed
    history: History = field(default_factory=History, compare=False, repr=False)  # what the backtest reads
    cost: WorkloadCost | None = None  # its GPUs at the configured prices; None: no GPU seen

    @property
    def release_risk(self) -> bool:
        return any(r.flagged for r in self.releases)

    @property
    def gpu_risk(self) -> bool:
        ratio = self.gpu.peak_ratio if self.gpu is not None else None
        return ratio is not None and ratio > FB_DANGER

    @property
    def risks(self) -> tuple[str, ...]:
        found = []
        if self.memory.risk in (Risk.OOM, Risk.HIGH, Risk.TIGHT):
            found.append(f"host memory {self.memory.risk.value}")
        if self.gpu_risk:
            found.append("GPU memory near full")
        if self.gpu is not None and self.gpu.verdict is KVVerdict.TOO_SMALL:
            found.append("KV cache too small")
        if self.release_risk:
            found.append("release raised memory")
        return tuple(found)

    @property
    def changes(self) -> tuple[str, ...]:
        found = []
        if self.memory.change:
            found.append("memory")
        found += [k.flag for k in self.knobs if k.change]
        if self.gpu is not None and self.gpu.recommended_utilization is not None:
            found.append("--gpu-memory-utilization")
        found += [name for name, _, _ in self.env]
        return tuple(found)

    @property
    def actionable(self) -> bool:
        """Risks count whatever the history (an OOM kill is a fact), changes only with enough data; neither
        for a workload no pod of which ran at the end of the window (gone, or scaled to zero)."""
        if not self.alive:
            return False
        return bool(self.risks) or (self.confidence.level is not Level.NONE and bool(self.changes))


@dataclass(frozen=True)
class WhatIf:
    """`--what-if`: the backtest of a value the user proposes for one workload."""

    workload: Key
    setting: str  # limit, request, gpu-memory-utilization
    value: float
    text: str  # the value as written
    passes: bool  # the value passes its backtest (proven: no kill, no CUDA out-of-memory, no full KV cache)
    answer: str  # one sentence
    backtest: Backtest | None = None  # limit and request
    facts: tuple[tuple[str, float | None], ...] = ()  # the numbers behind the answer, by name


@dataclass(frozen=True)
class ModelScaling:
    cluster: str
    namespace: str
    model: str
    workloads: tuple[Key, ...]  # the owners of the pods serving the model (targets for an autoscaler)
    steps: int  # steps with enough first tokens to judge
    burning: int  # of them, steps where the TTFT SLO burned
    objective: float | None
    queue_target: float | None
    kv_target: float | None
    basis: str  # why these targets, or why none
    replicas_now: int
    replicas_peak: int | None  # the most replicas the traffic needed (with the targets used)
    peak_at: float | None
    pods_at_peak: int | None
    targets_used: tuple[float, float]  # (queue, KV) the replica counts were computed with
    saving: Saving | None = None  # running the replicas the peak needed instead of those running now


@dataclass(frozen=True)
class Failure:
    quantity: str
    error: str


@dataclass(frozen=True)
class Rules:
    """The sizing rules in force (the JSON states them, so a reader can recompute every number)."""

    margin: float
    oom_factor: float
    oom_min_bytes: float
    granule_bytes: float
    tolerance: float
    release_rise: float
    min_history_s: int
    min_points: int


@dataclass(frozen=True)
class Report:
    url: str
    backend: str
    at: float
    window_s: int
    step_s: int
    load_s: int
    rules: Rules
    workloads: tuple[Workload, ...]
    notes: tuple[str, ...]
    failures: tuple[Failure, ...]
    requests: int
    elapsed_s: float
    slowest: tuple[tuple[float, str], ...] = field(default=(), compare=False)
    include_low: bool = False  # low-confidence workloads get their patches too
    what_if: WhatIf | None = None
    selectors: tuple[str, ...] = ()  # what discovery looked for (said when it found nothing)
    scaling: tuple[ModelScaling, ...] = ()  # with --autoscaling: per model, targets and replicas from history
    currency: str = ""  # of every cost in the report (cost.currency)

    @property
    def exit_code(self) -> int:
        """2: the server, or one of the questions asked, failed; with --what-if, 1 when the value fails its
        backtest; else 1: recommendations or risks, or no vLLM workload found at all (a wrong selector must
        not pass a CI job); 0: nothing to change."""
        if self.failures:
            return 2
        if self.what_if is not None:
            return 0 if self.what_if.passes else 1
        if not self.workloads:
            return 1
        return 1 if any(w.actionable for w in self.workloads) else 0
