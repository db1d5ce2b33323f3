"""What `obspack rightsize` found and recommends, as frozen records (the report and the JSON read these).

Sizes are bytes, times unix seconds, durations seconds, shares 0-1. `None` means not measured (the source
is missing or had nothing in the window), never zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


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
    LOW = "low"  # sized, but read the reasons
    NONE = "not enough data"  # no recommendation: measured values only


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
class Memory:
    """Host RAM of the container (cAdvisor working set, the figure the OOM killer acts on)."""

    load_peak: float | None  # the first minutes after each start
    serving_peak: float | None  # after that, whatever the traffic
    serving_p99: float | None
    traffic_peak: float | None  # serving, while requests were running
    split: bool  # load and serving told apart (start times known); else serving = the whole window
    oom_kills: int
    usage_at_kill: float | None  # the limit the container had when it was killed
    current_request: float | None
    current_limit: float | None
    request: float | None  # recommended; None: not enough data
    limit: float | None
    request_rule: str
    limit_rule: str
    risk: Risk
    peak_to_limit: float | None
    limit_change: bool  # the recommendation differs from the current value beyond the tolerance, or a risk
    request_change: bool

    @property
    def change(self) -> bool:
        return self.limit_change or self.request_change


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

    @property
    def peak_ratio(self) -> float | None:
        if self.peak is None or not self.framebuffer_total:
            return None
        return self.peak / self.framebuffer_total


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

    @property
    def release_risk(self) -> bool:
        return any(r.flagged for r in self.releases)

    @property
    def risks(self) -> tuple[str, ...]:
        found = []
        if self.memory.risk in (Risk.OOM, Risk.HIGH, Risk.TIGHT):
            found.append(f"host memory {self.memory.risk.value}")
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

    @property
    def exit_code(self) -> int:
        """2: the server, or one of the questions asked, failed; 1: recommendations or risks; 0: nothing."""
        if self.failures:
            return 2
        return 1 if any(w.actionable for w in self.workloads) else 0
