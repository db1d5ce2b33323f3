"""Autoscaling targets from history: placed where the TTFT SLO started to burn, withheld where history cannot
place them, and the replicas the peak needed by the HPA's own formula."""

from __future__ import annotations

import pytest

from obspack.config import ObspackConfig
from obspack.rightsize.scaling import suggest

CFG = ObspackConfig()
STEP = 900
KEY = ("c", "llm", "Qwen/Qwen3-8B")


def history(queue_at: list[float], burns_from: float | None, kv: float = 0.6, pods: float = 2.0):  # noqa: ANN201
    """One step per queue value; first tokens at 5 a second; 5% slow from `burns_from` up (None: always 0.2%)."""
    times = [float(i * STEP) for i in range(len(queue_at))]
    every = {t: 5.0 for t in times}
    bad = {t: 5.0 * (0.05 if burns_from is not None and q >= burns_from else 0.002) for t, q in zip(times, queue_at)}
    return {t: q for t, q in zip(times, queue_at)}, {t: kv for t in times}, {t: pods for t in times}, bad, every


def test_the_queue_target_is_80_percent_of_where_the_burn_started_and_the_peak_needs_the_formula() -> None:
    queue = [0, 2, 4, 8] * 20
    found = suggest(CFG, KEY, *history(queue, burns_from=4), step_s=STEP)
    assert (found.queue_target, found.kv_target) == (3.0, None)  # 80% of 4; the KV cache did not matter
    assert found.burning == 40 and found.steps == 80 and "at 4 requests waiting per engine or more" in found.basis
    assert found.replicas_peak == 6 and found.pods_at_peak == 2  # ceil(2 x 8 / 3)
    assert found.targets_used == (3.0, 0.8)


def test_a_kv_cache_that_burns_from_90_percent_gives_a_kv_target_of_80() -> None:
    times = [float(i * STEP) for i in range(80)]
    kv = {t: (0.5, 0.7, 0.9, 0.95)[i % 4] for i, t in enumerate(times)}
    bad = {t: 5.0 * (0.05 if kv[t] >= 0.9 else 0.002) for t in times}
    found = suggest(CFG, KEY, {t: 0.0 for t in times}, kv, {t: 1.0 for t in times}, bad, {t: 5.0 for t in times}, step_s=STEP)
    assert found.kv_target == 0.8 and found.queue_target is None  # floor(0.9 x 0.9, 0.05)


def test_an_slo_that_burns_whatever_the_queue_gets_no_target() -> None:
    found = suggest(CFG, KEY, *history([0, 2, 4, 8] * 20, burns_from=0), step_s=STEP)
    assert found.queue_target is None and found.kv_target is None
    assert "whatever the queue and KV cache (more replicas would not have helped)" in found.basis


@pytest.mark.parametrize(
    ("queue", "burns_from", "basis"),
    [
        ([0, 2] * 40, None, "the TTFT SLO burned in 0 of 80 steps: too few to place a target"),
        ([0] * 78 + [8, 8], 8, "the TTFT SLO burned in 2 of 80 steps: too few to place a target"),
    ],
)
def test_too_little_burning_places_no_target(queue: list[float], burns_from: float | None, basis: str) -> None:
    found = suggest(CFG, KEY, *history(queue, burns_from), step_s=STEP)
    assert (found.queue_target, found.kv_target, found.basis) == (None, None, basis)


def test_quiet_steps_are_not_judged_and_a_missing_histogram_or_slo_is_named() -> None:
    queue, kv, pods, bad, every = history([0, 8] * 40, burns_from=8)
    few = suggest(CFG, KEY, queue, kv, pods, bad, {t: 0.05 for t in every}, step_s=STEP)  # 45 first tokens a step
    assert few.steps == 0 and few.basis == "no step had 100 first tokens to judge the TTFT SLO by"
    none = suggest(CFG, KEY, queue, kv, pods, {}, {}, step_s=STEP)
    assert none.basis == "no time-to-first-token histogram (vllm:time_to_first_token_seconds) in the window"
    off = ObspackConfig.model_validate({"slos": {"time_to_first_token": {"enabled": False}}})
    assert suggest(off, KEY, queue, kv, pods, bad, every, step_s=STEP).basis.startswith("no time-to-first-token SLO")
