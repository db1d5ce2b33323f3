"""The sizing rules as pure functions: each rule's number from its inputs, and the case beside it."""

from __future__ import annotations

import math

import pytest

from obspack.rightsize import histograms as h
from obspack.rightsize import sizing
from obspack.rightsize.model import Decision, KVVerdict, Level, LoadSource, Release, Risk

GIB, MIB = sizing.GIB, sizing.MIB


def test_the_limit_is_the_highest_peak_plus_15_percent_rounded_up_to_256mi() -> None:
    value, rule = sizing.memory_limit(28 * GIB, None)
    assert value == 33024 * MIB and "peak 28Gi x 1.15" in rule
    assert sizing.memory_limit(10 * GIB, None)[0] == 11.5 * GIB  # 11.5 GiB is a whole number of 256 MiB
    assert sizing.memory_limit(None, None) == (None, "nothing measured")


def test_an_oom_kill_bumps_the_limit_to_125_percent_of_the_usage_at_the_kill_at_least_100mi_more() -> None:
    assert sizing.memory_limit(23.9 * GIB, 24 * GIB)[0] == 30 * GIB  # 24 x 1.25 beats 23.9 x 1.15
    assert "OOM-killed at 24Gi" in sizing.memory_limit(23.9 * GIB, 24 * GIB)[1]
    # A tiny container: +100 MiB beats x 1.25 (VPA's floor), then rounded up to 256 MiB.
    assert sizing.memory_limit(100 * MIB, 200 * MIB)[0] == 512 * MIB
    # A peak that outgrew the kill (the limit was raised since) still wins with its own margin.
    assert sizing.memory_limit(40 * GIB, 24 * GIB)[0] == 46 * GIB


def test_the_request_is_the_serving_p99_plus_15_percent_never_above_the_limit_nor_below_256mi() -> None:
    assert sizing.memory_request(12 * GIB, 33024 * MIB)[0] == 14 * GIB
    assert sizing.memory_request(30 * GIB, 20 * GIB)[0] == 20 * GIB
    assert sizing.memory_request(10 * MIB, None)[0] == 256 * MIB
    assert sizing.memory_request(None, 20 * GIB) == (None, "no serving data")


@pytest.mark.parametrize(
    ("peak", "limit", "kills", "known", "risk"),
    [
        (28, 32, 0, True, Risk.TIGHT),  # 28 x 1.15 = 32.2 > 32
        (27, 32, 0, True, Risk.OK),  # 27 x 1.15 = 31.05
        (31, 32, 0, True, Risk.HIGH),  # 97%
        (20, 32, 1, True, Risk.OOM),
        (20, None, 0, True, Risk.NO_LIMIT),
        (20, None, 0, False, Risk.UNKNOWN),
        (None, 32, 0, True, Risk.UNKNOWN),
    ],
)
def test_the_risk_of_the_current_limit(peak, limit, kills, known, risk) -> None:  # noqa: ANN001
    found, _ = sizing.host_risk(peak and peak * GIB, limit and limit * GIB, kills, known)
    assert found is risk


def test_a_limit_is_lowered_only_with_a_known_model_load_and_raised_whenever_the_rule_asks() -> None:
    assert sizing.decide_limit(23 * GIB, 96 * GIB, Risk.OK, load_known=False)[:2] == (Decision.KEEP, 96 * GIB)
    assert sizing.decide_limit(23 * GIB, 96 * GIB, Risk.OK, load_known=True)[:2] == (Decision.CHANGE, 23 * GIB)
    assert sizing.decide_limit(30 * GIB, 24 * GIB, Risk.OOM, load_known=False)[:2] == (Decision.CHANGE, 30 * GIB)
    # tight: 32.25 is within 10% of 32, but the risk asks for the headroom
    assert sizing.decide_limit(32.25 * GIB, 32 * GIB, Risk.TIGHT, load_known=True)[:2] == (Decision.CHANGE, 32.25 * GIB)
    assert sizing.decide_limit(15 * GIB, 16 * GIB, Risk.OK, load_known=True)[:2] == (Decision.KEEP, 16 * GIB)
    assert sizing.decide_limit(20 * GIB, None, Risk.NO_LIMIT, load_known=True)[:2] == (Decision.CHANGE, 20 * GIB)
    assert sizing.decide_limit(20 * GIB, None, Risk.NO_LIMIT, load_known=False)[:2] == (Decision.NONE, None)


def test_a_request_goes_under_the_limit_in_force_even_when_it_is_within_the_tolerance() -> None:
    assert sizing.decide_request(14 * GIB, 32 * GIB, 32.25 * GIB, True)[:2] == (Decision.CHANGE, 14 * GIB)
    assert sizing.decide_request(15 * GIB, 16 * GIB, 32 * GIB, True)[:2] == (Decision.KEEP, 16 * GIB)
    assert sizing.decide_request(25 * GIB, 26 * GIB, 25.5 * GIB, True)[:2] == (Decision.CHANGE, 25 * GIB)
    assert sizing.decide_request(14 * GIB, None, 32 * GIB, True)[:2] == (Decision.CHANGE, 14 * GIB)
    assert sizing.decide_request(None, 16 * GIB, 32 * GIB, True)[0] is Decision.NONE


def test_sizes_are_printed_as_the_patch_writes_them() -> None:
    assert [sizing.quantity(v) for v in (30 * GIB, 68352 * MIB, 33024 * MIB, 300 * MIB, 13000 * MIB)] == [
        "30Gi", "66.75Gi", "32.25Gi", "300Mi", "13000Mi"
    ]
    assert sizing.human_bytes(23.9 * GIB) == "23.9Gi" and sizing.human_bytes(68352 * MIB) == "66.75Gi"
    assert [sizing.days(s) for s in (14 * 86400, 36 * 3600, 60, 2 * 86400 - 1800)] == ["14d", "1d12h", "1m", "2d"]


def test_a_value_within_10_percent_is_kept() -> None:
    assert not sizing.differs(10.5, 10.0) and sizing.differs(11.5, 10.0) and sizing.differs(8.5, 10.0)
    assert not sizing.differs(None, 10.0) and not sizing.differs(10.0, None)


@pytest.mark.parametrize(
    ("peak", "p99", "preemptions", "share", "by_reason", "verdict"),
    [
        (1.0, 0.97, 0, 0.0, True, KVVerdict.TOO_SMALL),  # full at p99
        (0.7, 0.6, 12, 0.0, True, KVVerdict.TOO_SMALL),  # preemptions
        (0.7, 0.6, 0, 0.05, True, KVVerdict.TOO_SMALL),  # capacity waits (vLLM 0.20+ says why)
        (0.7, 0.6, 0, 0.05, False, KVVerdict.FITS),  # waits of unknown reason with room in the cache
        (0.9, 0.85, 0, 0.05, False, KVVerdict.TOO_SMALL),  # waits of unknown reason, cache at 85%
        (0.4, 0.3, 0, 0.0, True, KVVerdict.IDLE),
        (0.7, 0.6, 0, 0.0, True, KVVerdict.FITS),
        (None, None, None, None, False, KVVerdict.UNKNOWN),
    ],
)
def test_the_kv_cache_verdict(peak, p99, preemptions, share, by_reason, verdict) -> None:  # noqa: ANN001
    assert sizing.kv_verdict(peak, p99, preemptions, share, by_reason) is verdict


def test_gpu_memory_utilization_is_raised_to_a_95_percent_framebuffer_only_when_the_kv_cache_is_too_small() -> None:
    assert sizing.utilization(0.85, 0.86, KVVerdict.TOO_SMALL) == 0.94
    assert sizing.utilization(0.85, 0.86, KVVerdict.FITS) is None
    assert sizing.utilization(0.9, 0.94, KVVerdict.TOO_SMALL) is None  # less than 0.02 of room: keep it
    assert sizing.utilization(0.95, 0.99, KVVerdict.FITS) == 0.91  # past 97%: lowered by the excess
    assert sizing.utilization(None, 0.5, KVVerdict.TOO_SMALL) is None
    # DCGM's whole MiB: 0.85 + 0.95 - 70141/81559 = 0.9399968, which the rule means as 0.94
    assert sizing.utilization(0.85, 70141 / 81559, KVVerdict.TOO_SMALL) == 0.94
    assert sizing.utilization(0.85, 0.8601, KVVerdict.TOO_SMALL) == 0.93  # a real hundredth short stays short


def _buckets(cdf: dict[float, float], total: float = 1e6) -> h.Buckets:
    return h.cumulative([*((le, share * total) for le, share in cdf.items()), (math.inf, total)])


def test_max_model_len_is_the_prompt_and_generation_p999_rounded_up_to_1024() -> None:
    prompt = _buckets({2000: 0.8, 5000: 0.998, 10000: 1.0})
    generation = _buckets({200: 0.998, 500: 1.0})
    k = sizing.max_model_len(prompt, generation, 131072, "from the cache config")
    measured = dict(k.measured)
    assert k.recommended == 8192 and k.change
    assert measured["prompt_p999"] == pytest.approx(7500) and measured["generation_p999"] == pytest.approx(350)
    assert measured["refused_share"] == pytest.approx(0.002 * (10000 - 7842) / 5000)
    assert not sizing.max_model_len(prompt, generation, 12000, "").change  # under twice the need: keep it
    few = sizing.max_model_len(_buckets({10: 1.0}, 999), generation, 131072, "")
    assert few.recommended is None and "999 requests" in few.basis
    missing = sizing.max_model_len((), (), 131072, "")
    assert missing.recommended is None and missing.basis == "no prompt-length histogram (vllm:request_prompt_tokens) in the window"


def test_max_num_seqs_is_twice_the_running_peak_and_counts_only_when_the_batch_capped_a_roomy_cache() -> None:
    k = sizing.max_num_seqs(12, 0.0, 0.4)
    assert k.recommended == 24 and not k.change and k.current is None
    assert sizing.max_num_seqs(256, 0.2, 0.5).change  # queued while the KV cache had room
    assert not sizing.max_num_seqs(256, 0.2, 0.95).change  # queued because the cache was full
    assert sizing.max_num_seqs(0, 0, None).recommended is None


def test_max_num_batched_tokens_is_the_bucket_above_the_step_p99_at_least_2048() -> None:
    steps = _buckets({256: 0.9, 512: 0.995, 1024: 1.0})
    assert sizing.max_num_batched_tokens(steps).recommended == 2048
    assert sizing.max_num_batched_tokens(_buckets({4096: 0.5, 8192: 1.0})).recommended == 8192
    assert sizing.max_num_batched_tokens(()).recommended is None


def test_prefix_caching_goes_off_only_with_a_low_hit_rate_under_kv_pressure() -> None:
    off = sizing.prefix_caching(True, 0.02, True, 0.3)
    assert off.change and (off.flag, off.recommended) == ("--enable-prefix-caching", "off")
    kept = sizing.prefix_caching(True, 0.6, True, 0.3)
    assert (kept.flag, kept.recommended, kept.change) == ("--enable-prefix-caching", "on", False)
    assert not sizing.prefix_caching(True, 0.02, False, 0.3).change
    assert not sizing.prefix_caching(True, 0.6, True, 0.3).change
    assert sizing.prefix_caching(False, None, True, 0.3) is None


def test_expandable_segments_when_the_cuda_allocator_fragments_or_retries() -> None:
    assert sizing.allocator_env(0.4, 0, 0.3)[:2] == ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    assert sizing.allocator_env(0.1, 3, 0.3) is not None
    assert sizing.allocator_env(0.1, 0, 0.3) is None and sizing.allocator_env(None, None, 0.3) is None


def test_a_release_is_flagged_when_a_peak_rose_more_than_the_share_over_the_image_before() -> None:
    old = Release("vllm:v0.30.0", 100, 1, 20 * GIB, 15 * GIB, 70 * GIB)
    same = Release("vllm:v0.30.1", 200, 1, 21 * GIB, 15 * GIB, 70 * GIB)
    risen = Release("vllm:v0.31.0", 300, 1, 26 * GIB, 19.5 * GIB, 70 * GIB)
    out = sizing.compare_releases([risen, old, same], 0.15)
    assert [r.image for r in out] == ["vllm:v0.30.0", "vllm:v0.30.1", "vllm:v0.31.0"]
    assert [r.flagged for r in out] == [False, False, True]
    assert dict(out[2].rises)["load"] == pytest.approx(26 / 21 - 1) and dict(out[2].rises)["GPU"] == 0


def test_confidence_not_enough_data_below_the_history_or_the_points_low_or_medium_with_reasons() -> None:
    week = 7 * 86400
    seen = LoadSource.OBSERVED
    assert sizing.confidence(576, 2 * 86400, 0, week, 2 * week, seen).level is Level.NONE
    assert sizing.confidence(50, 2 * week, 0, week, 2 * week, seen).level is Level.NONE
    assert sizing.confidence(4000, 2 * week, 0, week, 2 * week, seen).level is Level.HIGH
    low = sizing.confidence(4000, 2 * week, 6, week, 2 * week, LoadSource.UNSEEN, split=False)
    assert low.level is Level.LOW and len(low.reasons) == 2
    assert sizing.confidence(4000, 2 * week, 0, week, 2 * week, LoadSource.UNSEEN).level is Level.MEDIUM
    assert sizing.confidence(4000, 2 * week, 0, week, 2 * week, LoadSource.SIBLING).level is Level.MEDIUM
    short = sizing.confidence(4000, 30, 0, 60, 2 * week, seen)
    assert short.reasons == ("0s of data, 1m needed",)  # durations as people write them, not 0.000694 d
