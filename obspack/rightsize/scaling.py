"""Autoscaling targets from history (`rightsize --autoscaling`), pure: per model, where the time-to-first-token
SLO started to burn, and how many replicas the model needed at its peak.

Each step of the window (15 minutes) gives, per model: the requests waiting for capacity per engine, the KV
cache usage (as the saturation record reads them), the pods serving, and the share of first tokens slower
than the SLO's threshold. A step burns when that share is above the error budget's (1 - objective); only
steps with at least MIN_REQUESTS first tokens are judged.

- The level at which the SLO started to burn, for the queue and for the KV cache: of the levels seen (queue
  to 0.5, KV to 0.05), the one that best splits the burning steps (at or above it) from the others, with at
  least half of the steps above it burning and a quarter more than below it. The target is that
  level less a margin (QUEUE_MARGIN, KV_MARGIN): a new replica loads its model for minutes, so scaling
  must start before the burn does. No target is suggested when fewer than MIN_BURNING steps burned (nothing
  to place it against), or when the SLO burned as often at low levels as at high ones (more replicas would
  not have helped: look at prompt lengths and prefill).
- The replicas needed: at each step, the HPA's formula ceil(pods x signal) with the targets (suggested, or
  configured), the highest over the window, and when.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from obspack.config import ObspackConfig
from obspack.rightsize.model import Key, ModelScaling

Series = Mapping[float, float]  # time -> value
MIN_REQUESTS = 100  # first tokens in a step to judge whether it burned
MIN_BURNING = 3  # burning steps to place a target
BURN_SHARE = 0.5  # at least this share of the steps at or above a level burned
MIN_LIFT = 0.25  # and this much more than of the steps below it
QUEUE_MARGIN = 0.8  # the queue target: 80% of the level where the burn started
KV_MARGIN = 0.9  # the KV target: 90% of it


def objective(cfg: ObspackConfig, model: str) -> tuple[float, float] | None:
    """(objective, threshold) of the model's TTFT SLO: the first slos.models entry it matches, else the
    defaults; None when that SLO is off for it."""
    s = cfg.slos
    base = s.time_to_first_token
    if not s.enabled:
        return None
    for entry in s.models:
        if re.fullmatch(entry.model_regex, model):
            mine = entry.time_to_first_token
            enabled = base.enabled if mine.enabled is None else mine.enabled
            if not enabled:
                return None
            return (mine.objective or base.objective, mine.threshold or base.threshold)
    return (base.objective, base.threshold) if base.enabled else None


def configured_targets(cfg: ObspackConfig, model: str) -> tuple[float, float]:
    a = cfg.autoscaling
    for entry in a.models:
        if re.fullmatch(entry.model_regex, model):
            return (entry.queue or a.targets.queue, entry.kv_cache or a.targets.kv_cache)
    return a.targets.queue, a.targets.kv_cache


def _level(samples: list[tuple[float, bool]], step: float) -> float | None:
    """Where burning starts: of the levels seen (floored to `step`), the one that best splits burning steps
    (at or above it) from the rest (below it), with at least BURN_SHARE burning above and MIN_LIFT more than
    below. None when no level does: burning happens whatever the level, or too rarely."""
    best: tuple[float, float] | None = None
    for level in sorted({_floor(value, step) for value, _ in samples if value >= step}):
        above = [burned for value, burned in samples if value >= level]
        below = [burned for value, burned in samples if value < level]
        if sum(above) < MIN_BURNING or not below:
            continue
        lift = sum(above) / len(above) - sum(below) / len(below)
        if sum(above) / len(above) >= BURN_SHARE and lift >= MIN_LIFT and (best is None or lift > best[0]):
            best = (lift, level)
    return best[1] if best else None


def _floor(value: float, step: float) -> float:
    return round(math.floor(round(value / step, 6)) * step, 6)


def suggest(
    cfg: ObspackConfig,
    key: tuple[str, str, str],
    queue: Series,
    kv: Series,
    pods: Series,
    bad: Series,
    every: Series,
    step_s: int,
    workloads: tuple[Key, ...] = (),
) -> ModelScaling:
    cluster, namespace, model = key
    slo = objective(cfg, model)
    judged: list[tuple[float, float | None, float | None, bool]] = []  # time, queue, kv, burned
    if slo is not None:
        budget = 1 - slo[0]
        for at, rate in sorted(every.items()):
            if rate * step_s < MIN_REQUESTS:
                continue
            judged.append((at, queue.get(at), kv.get(at), bad.get(at, 0.0) / rate > budget))
    burning = sum(1 for *_, burned in judged if burned)
    queue_target = kv_target = None
    if slo is None:
        basis = "no time-to-first-token SLO for this model: nothing to place a target against"
    elif not every:
        basis = "no time-to-first-token histogram (vllm:time_to_first_token_seconds) in the window"
    elif not judged:
        basis = f"no step had {MIN_REQUESTS} first tokens to judge the TTFT SLO by"
    elif burning < MIN_BURNING:
        basis = f"the TTFT SLO burned in {burning} of {len(judged)} steps: too few to place a target"
    else:
        q_level = _level([(q, burned) for _, q, _, burned in judged if q is not None], 0.5)
        k_level = _level([(k, burned) for _, _, k, burned in judged if k is not None], 0.05)
        if q_level is not None:
            queue_target = max(0.5, _floor(q_level * QUEUE_MARGIN, 0.5))
        if k_level is not None:
            kv_target = min(0.95, max(0.3, _floor(k_level * KV_MARGIN, 0.05)))
        found = []
        if q_level is not None:
            found.append(f"at {q_level:g} requests waiting per engine or more")
        if k_level is not None:
            found.append(f"at a KV cache of {k_level:.0%} or more")
        basis = (
            f"the TTFT SLO burned in {burning} of {len(judged)} steps, mostly "
            + (" and ".join(found) if found else "whatever the queue and KV cache (more replicas would not have helped)")
        )
    used = (
        queue_target or configured_targets(cfg, model)[0],
        kv_target or configured_targets(cfg, model)[1],
    )
    peak = peak_at = pods_then = None
    for at, n in pods.items():
        signal = max((queue.get(at) or 0) / used[0], (kv.get(at) or 0) / used[1])
        needed = math.ceil(round(n * signal, 6))
        if peak is None or needed > peak:
            peak, peak_at, pods_then = needed, at, int(n)
    now = int(pods[max(pods)]) if pods else 0
    return ModelScaling(
        cluster=cluster,
        namespace=namespace,
        model=model,
        workloads=workloads,
        steps=len(judged),
        burning=burning,
        objective=slo[0] if slo else None,
        queue_target=queue_target,
        kv_target=kv_target,
        basis=basis,
        replicas_now=now,
        replicas_peak=peak,
        peak_at=peak_at,
        pods_at_peak=pods_then,
        targets_used=used,
    )
