"""The sizing rules, as pure functions of what was measured. docs/rightsize.md states each one.

Host memory (after Robusta KRR and the Kubernetes VPA recommender, see docs/rightsize.md for the comparison):
- limits.memory = the highest peak (model load, serving, or any sample of a run) x (1 + MARGIN), rounded up
  to GRANULE;
- after an OOM kill in the window, at least max(usage at the kill x OOM_FACTOR, usage + OOM_MIN_STEP), the
  usage at the kill being the limit the kernel enforced then;
- a limit is lowered only with a model-load peak to size it from (seen, or taken from a sound source):
  without one it is kept, since the next start would need what the window never showed;
- requests.memory = the serving p99 x (1 + MARGIN), rounded up, at least MIN_REQUEST and at most the limit.
A current value within TOLERANCE of the recommendation is left alone.
"""

from __future__ import annotations

import math

from obspack.durations import format_s
from obspack.rightsize import histograms as h
from obspack.rightsize.histograms import Buckets
from obspack.rightsize.model import (
    FB_DANGER,
    Confidence,
    Decision,
    Knob,
    KVVerdict,
    Level,
    LoadSource,
    Release,
    Risk,
)

MIB = 1024 * 1024
GIB = 1024 * MIB

MARGIN = 0.15  # KRR's buffer and VPA's safety margin
OOM_FACTOR = 1.25  # KRR's bump after an OOM kill
OOM_MIN_STEP = 100 * MIB  # VPA: after an OOM, at least usage + 100 MiB
GRANULE = 256 * MIB
MIN_REQUEST = 256 * MIB  # VPA's minimum is 250 MB
TOLERANCE = 0.10
RISK_HIGH = 0.95  # a peak at 95% of the limit is one spike from an OOM kill
MIN_POINTS = 100  # KRR's minimum of data points
MIN_REQUESTS = 1000  # below this a p99.9 is a guess
RELEASE_RISE = MARGIN  # a release that eats the whole headroom is a risk

KV_FULL = 0.90  # KV cache p99 at or above this: the cache is the bottleneck
KV_IDLE = 0.50  # KV cache peak below this: mostly idle
KV_ROOM = 0.80  # below this the KV cache had room while requests queued
WAIT_SHARE = 0.01  # waits in 1% of the serving time count
FB_TARGET = 0.95  # leave 5% of the card to CUDA graphs, NCCL and the allocator's slack
RESTARTS_LOW = 5  # crash loops cut peaks short
PREFIX_FLAG = "--enable-prefix-caching"  # vLLM's boolean flag; off is --no-enable-prefix-caching


def quantity(value: float) -> str:
    """A size as Kubernetes takes it and a person writes it, exactly: 32Gi, 66.75Gi, 300Mi, 13000Mi. Whole
    GiB to the hundredth are written in Gi, other whole MiB in Mi, anything else in bytes. Every
    recommendation is a whole number of 256 MiB, so the report and the patch print the same text."""
    whole = round(value)
    hundredths = whole * 100 / GIB
    if whole >= GIB and hundredths == int(hundredths):
        return _decimals(whole / GIB) + "Gi"
    if whole % MIB == 0:
        return f"{whole // MIB}Mi"
    if whole % 1024 == 0:
        return f"{whole // 1024}Ki"
    return str(whole)


def human_bytes(value: float) -> str:
    """A measured size, to read: GiB to two decimals (28Gi, 23.9Gi, 70.31Gi), MiB below one GiB (300Mi).
    Equal to `quantity` for every whole number of 256 MiB at or above a GiB."""
    if value >= GIB:
        return _decimals(value / GIB) + "Gi"
    return f"{value / MIB:.0f}Mi"


def _decimals(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def days(seconds: float) -> str:
    """A span as a person says it: 14d, 1d12h, 6h, 45m (to the hour above a day, the minute below)."""
    unit = 3600 if seconds >= 86400 else 60
    return format_s(max(round(seconds / unit) * unit, 0)) or "0s"


def round_up(value: float, granule: float) -> float:
    return math.ceil(value / granule - 1e-9) * granule


def differs(recommended: float | None, current: float | None, tolerance: float = TOLERANCE) -> bool:
    """Whether a known current value is further than `tolerance` from the recommendation."""
    if recommended is None or current is None:
        return False
    return current <= 0 or abs(recommended - current) / current > tolerance


# ---------------------------------------------------------------------------------------------------------
# Host memory


def memory_limit(peak: float | None, usage_at_kill: float | None) -> tuple[float | None, str]:
    """(recommended limits.memory, the rule that gave it)."""
    if peak is None and usage_at_kill is None:
        return None, "nothing measured"
    candidates = []
    if peak is not None:
        candidates.append((peak * (1 + MARGIN), f"peak {human_bytes(peak)} x {1 + MARGIN:g}"))
    if usage_at_kill is not None:
        bumped = max(usage_at_kill * OOM_FACTOR, usage_at_kill + OOM_MIN_STEP)
        candidates.append((bumped, f"OOM-killed at {human_bytes(usage_at_kill)}: x {OOM_FACTOR:g}"))
    value, rule = max(candidates)
    return round_up(value, GRANULE), f"{rule}, rounded up to {human_bytes(GRANULE)}"


def memory_request(serving_p99: float | None, limit: float | None) -> tuple[float | None, str]:
    if serving_p99 is None:
        return None, "no serving data"
    value = max(round_up(serving_p99 * (1 + MARGIN), GRANULE), MIN_REQUEST)
    if limit is not None:
        value = min(value, limit)
    return value, f"serving p99 {human_bytes(serving_p99)} x {1 + MARGIN:g}, rounded up"


def decide_limit(
    computed: float | None, current: float | None, risk: Risk, load_known: bool
) -> tuple[Decision, float | None, str]:
    """(decision, the limit to set, why). A limit is raised when the rule asks for more than the tolerance
    (or a risk asks for any more); it is lowered only when the model-load peak is known, since a limit
    sized from serving alone kills the next start; a limit is set where there is none only then too."""
    if computed is None:
        return Decision.NONE, None, "nothing measured"
    if current is None:
        if risk is Risk.NO_LIMIT and load_known:
            return Decision.CHANGE, computed, "no limit set"
        if risk is Risk.NO_LIMIT:
            return Decision.NONE, None, "no limit set, and the model load was not seen: a limit from serving alone would kill the next start"
        return Decision.NONE, None, "the current limit is unknown (no kube-state-metrics, no cAdvisor spec)"
    raised = computed > current and (differs(computed, current) or risk in (Risk.OOM, Risk.HIGH, Risk.TIGHT))
    if raised:
        return Decision.CHANGE, computed, "raised"
    if not differs(computed, current):
        return Decision.KEEP, current, f"within {TOLERANCE:.0%}"
    if load_known:
        return Decision.CHANGE, computed, "lowered"
    return Decision.KEEP, current, "the model load was not seen, so it is not lowered: the next start needs it"


def decide_request(
    computed: float | None, current: float | None, limit: float | None, limits_known: bool
) -> tuple[Decision, float | None, str]:
    """(decision, the request to set, why): the rule's value, never above the limit that will be in force."""
    if computed is None:
        return Decision.NONE, None, "no serving data"
    value = min(computed, limit) if limit is not None else computed
    if current is None:
        return (Decision.CHANGE, value, "no request set") if limits_known else (Decision.NONE, None, "the current request is unknown")
    if limit is not None and current > limit:
        return Decision.CHANGE, value, "above the limit"
    if differs(value, current):
        return Decision.CHANGE, value, "raised" if value > current else "lowered"
    return Decision.KEEP, current, f"within {TOLERANCE:.0%}"


def host_risk(
    peak: float | None, limit: float | None, oom_kills: int, limits_known: bool
) -> tuple[Risk, float | None]:
    """How close the peak came to the current limit, and the ratio."""
    ratio = peak / limit if peak is not None and limit else None
    if oom_kills:
        return Risk.OOM, ratio
    if limit is None:
        return (Risk.NO_LIMIT if limits_known else Risk.UNKNOWN), None
    if ratio is None:
        return Risk.UNKNOWN, None
    if ratio >= RISK_HIGH:
        return Risk.HIGH, ratio
    if ratio * (1 + MARGIN) > 1:
        return Risk.TIGHT, ratio
    return Risk.OK, ratio


# ---------------------------------------------------------------------------------------------------------
# GPU memory and the KV cache


def kv_verdict(
    kv_peak: float | None, kv_p99: float | None, preemptions: float | None, waiting_share: float | None,
    waits_by_reason: bool,
) -> KVVerdict:
    """Too small: preemptions, a p99 at KV_FULL, or capacity waits (vLLM 0.20+ names the reason; before,
    waits count only together with a KV cache at KV_ROOM or more). Mostly idle: the peak under KV_IDLE."""
    if kv_peak is None and kv_p99 is None and preemptions is None:
        return KVVerdict.UNKNOWN
    waits = (waiting_share or 0) >= WAIT_SHARE
    full = kv_p99 is not None and kv_p99 >= KV_FULL
    if (preemptions or 0) >= 1 or full or (waits and (waits_by_reason or (kv_p99 or 0) >= KV_ROOM)):
        return KVVerdict.TOO_SMALL
    if kv_peak is not None and kv_peak < KV_IDLE and not waits:
        return KVVerdict.IDLE
    return KVVerdict.FITS


def utilization(current: float | None, fb_peak_ratio: float | None, verdict: KVVerdict) -> float | None:
    """A new --gpu-memory-utilization, or None to keep it: raised so the framebuffer peaks at FB_TARGET
    when the KV cache is too small, lowered by the excess when the framebuffer passed FB_DANGER."""
    if current is None or fb_peak_ratio is None:
        return None
    if fb_peak_ratio > FB_DANGER:
        return _hundredths(current - (fb_peak_ratio - FB_TARGET))
    if verdict is KVVerdict.TOO_SMALL:
        raised = _hundredths(min(FB_TARGET, current + (FB_TARGET - fb_peak_ratio)))
        return raised if raised >= current + 0.02 else None
    return None


def _hundredths(value: float) -> float:
    """Rounded down to 0.01, after cutting what lies below the framebuffer's resolution: DCGM reports whole
    MiB (1 MiB of an 80 GiB card is 0.0012%), so 0.85 + 0.95 - 70141/81559 = 0.9399968 is 0.94, not 0.93."""
    return math.floor(round(value * 100, 2)) / 100


# ---------------------------------------------------------------------------------------------------------
# vLLM's own knobs


def max_model_len(prompt: Buckets, generation: Buckets, current: float | None, current_note: str) -> Knob:
    """prompt p99.9 + generation p99.9, rounded up to 1024; a change when the current value is over twice
    that. The refused share counts prompts longer than the new length minus the generation p99.9."""
    flag = "--max-model-len"
    requests = h.total(prompt)
    if not prompt:
        return Knob(flag, current, current_note, None, "no prompt-length histogram (vllm:request_prompt_tokens) in the window", False)
    if requests < MIN_REQUESTS:
        return Knob(flag, current, current_note, None, f"{requests:,.0f} requests in the window (p99.9 needs {MIN_REQUESTS:,})", False)
    p = h.quantile(0.999, prompt) or 0.0
    g = h.quantile(0.999, generation) or 0.0
    recommended = max(1024.0, round_up(p + g, 1024))
    refused = h.share_above(recommended - g, prompt)
    longest = h.max_bound(prompt)
    longest_text = "above the highest bucket" if longest == math.inf else f"at most {longest:,.0f}"
    if refused <= 0:
        refused_text = "no request would be refused"
    else:
        share = "under 0.01%" if refused < 0.0001 else f"about {refused:.2%}"
        refused_text = f"{share} of requests would be refused"
    basis = f"prompt p99.9 {p:,.0f} + generation p99.9 {g:,.0f} tokens (longest prompt {longest_text}); {refused_text}"
    measured = (
        ("requests", requests),
        ("prompt_p999", p),
        ("generation_p999", g),
        ("longest_prompt_at_most", longest if longest is not None else math.nan),
        ("refused_share", refused),
    )
    change = current is not None and current > 2 * recommended
    return Knob(flag, current, current_note, recommended, basis, change, measured)


def max_num_seqs(running_peak: float | None, waiting_share: float | None, kv_p99: float | None) -> Knob:
    """Twice the running peak per engine, rounded up to 8; a change only when requests queued while the KV
    cache had room (the batch, not the cache, was the limit). vLLM does not export the current value."""
    flag, note = "--max-num-seqs", "not exported by vLLM"
    if running_peak is None or running_peak <= 0:
        return Knob(flag, None, note, None, "no request ran in the window", False)
    recommended = max(8.0, round_up(2 * running_peak, 8))
    capped = (waiting_share or 0) >= WAIT_SHARE and kv_p99 is not None and kv_p99 < KV_ROOM
    basis = f"running peak {running_peak:.0f} per engine"
    if capped:
        basis += f"; requests waited {waiting_share:.1%} of the time while the KV cache had room"
    return Knob(flag, None, note, recommended, basis, capped, (("running_peak", running_peak),))


def max_num_batched_tokens(iteration: Buckets) -> Knob:
    """The smallest bucket bound above the p99 of tokens per engine step, at least 2048 (vLLM's chunked
    prefill default). A suggestion: vLLM does not export the current value."""
    flag, note = "--max-num-batched-tokens", "not exported by vLLM"
    if not iteration:
        return Knob(flag, None, note, None, "no engine steps in the window", False)
    p99 = h.quantile(0.99, iteration) or 0.0
    bound = next((le for le, _ in iteration if le >= p99 and math.isfinite(le)), p99)
    recommended = max(2048.0, bound)
    top = h.max_bound(iteration)
    top_text = "above the highest bucket" if top == math.inf else f"at most {top:g}"
    basis = f"engine steps carry p99 {p99:.0f} tokens ({top_text}); longer prefills are split in chunks"
    return Knob(flag, None, note, recommended, basis, False, (("step_tokens_p99", p99),))


def prefix_caching(enabled: bool | None, hit_rate: float | None, pressure: bool, low: float) -> Knob | None:
    """Off (`--no-enable-prefix-caching`) when the hit rate is under `low` (the alert's threshold) while the
    KV cache is under pressure; else kept on. The knob is vLLM's `--enable-prefix-caching`, on or off."""
    if hit_rate is None or enabled is False:
        return None
    note = "on" if enabled else "unknown (on by default in V1)"
    basis = f"prefix cache hit rate {hit_rate:.1%} over the window"
    measured = (("hit_rate", hit_rate),)
    if hit_rate < low and pressure:
        return Knob(PREFIX_FLAG, None, note, "off", basis + " while the KV cache is too small", True, measured)
    return Knob(PREFIX_FLAG, None, note, "on", basis, False, measured)


def allocator_env(fragmentation_p99: float | None, retries: float | None, ratio: float) -> tuple[str, str, str] | None:
    """PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True when the CUDA caching allocator fragments (the
    alert's ratio at p99) or had to retry allocations."""
    reasons = []
    if fragmentation_p99 is not None and fragmentation_p99 > ratio:
        reasons.append(f"{fragmentation_p99:.0%} of the allocator's unused memory in inactive split blocks (p99)")
    if retries is not None and retries >= 1:
        reasons.append(f"{retries:.0f} allocation retries after a cache flush")
    if not reasons:
        return None
    return ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", "; ".join(reasons))


# ---------------------------------------------------------------------------------------------------------
# Releases and confidence


def compare_releases(releases: list[Release], rise: float = RELEASE_RISE) -> tuple[Release, ...]:
    """In order of first appearance; each image compared with the one before it, peak by peak."""
    ordered = sorted(releases, key=lambda r: (r.first_seen, r.image))
    out = []
    for i, release in enumerate(ordered):
        if i == 0:
            out.append(release)
            continue
        before = ordered[i - 1]
        rises = []
        for what, new, old in (
            ("load", release.load_peak, before.load_peak),
            ("serving", release.serving_peak, before.serving_peak),
            ("GPU", release.gpu_peak, before.gpu_peak),
        ):
            if new is not None and old:
                rises.append((what, new / old - 1))
        flagged = any(share > rise for _, share in rises)
        out.append(Release(**{**release.__dict__, "rises": tuple(rises), "flagged": flagged}))
    return tuple(out)


def confidence(
    points: int, span_s: float, restarts: int, min_history_s: int, window_s: int, load: LoadSource, split: bool = True
) -> Confidence:
    """Not enough data below MIN_POINTS samples or `min_history_s` of history. Low with under 80% of the
    window, crash loops, or load and serving not told apart (its patch needs --include-low). Medium when
    the model load was not seen in the window: taken from another source, or the limit kept without it."""
    if points < MIN_POINTS or span_s < min_history_s:
        why = f"{days(span_s)} of data, {days(min_history_s)} needed" if span_s < min_history_s else (
            f"{points} samples, {MIN_POINTS} needed"
        )
        return Confidence(Level.NONE, points, span_s, restarts, (why,))
    low, medium = [], []
    if span_s < 0.8 * window_s:
        low.append(f"data covers {days(span_s)} of the {days(window_s)} window")
    if restarts >= RESTARTS_LOW:
        low.append(f"{restarts} restarts: crash loops cut peaks short")
    if not split:
        low.append("no container start times: model load and serving not told apart")
    if load is LoadSource.UNSEEN and split:
        medium.append("no start in the window: the model load was not seen, so the limit is not lowered")
    elif load is LoadSource.BEFORE:
        medium.append("no start in the window: the model load is taken from the data before it")
    elif load is LoadSource.SIBLING:
        medium.append("no start in the window: the model load is taken from another workload of the same image and model")
    level = Level.LOW if low else Level.MEDIUM if medium else Level.HIGH
    return Confidence(level, points, span_s, restarts, (*low, *medium))
