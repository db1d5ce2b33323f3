"""Tests of obspack.exporter.derive: every formula on numbers, then on fixture payloads."""

from __future__ import annotations

import pytest

from obspack.exporter import derive as d
from obspack.exporter.derive import CacheConfig, EngineInputs, EngineKey
from obspack.exporter.parse import Sample, parse_needed

from .conftest import payload

# ---------------------------------------------------------------------------------------------------
# Formulas


@pytest.mark.parametrize(
    ("hits", "queries", "expected"),
    [
        (25, 100, 0.25),
        (0, 100, 0.0),
        (100, 100, 1.0),
        (150, 100, 1.0),
        (-5, 100, 0.0),
        (0, 0, None),
        (5, -1, None),
    ],
)
def test_hit_ratio(hits: float, queries: float, expected: float | None) -> None:
    assert d.hit_ratio(hits, queries) == expected


@pytest.mark.parametrize(
    ("usage", "blocks", "expected"),
    [
        (0.25, 1000, (250, 750)),
        (0.0, 1000, (0, 1000)),
        (1.0, 1000, (1000, 0)),
        (0.2227, 9150, (2038, 7112)),
        (1.5, 10, (10, 0)),
        (-0.1, 10, (0, 10)),
    ],
)
def test_kv_blocks(usage: float, blocks: int, expected: tuple[int, int]) -> None:
    assert d.kv_blocks(usage, blocks) == expected


def test_kv_fragmentation_ratio_formula() -> None:
    # 10 running requests, each last block half empty on average: 10 * 15 / 2 = 75 empty slots of 250 * 16.
    assert d.kv_fragmentation_ratio(10, 250, 16) == pytest.approx(75 / 4000)
    # block size 1 never leaves an empty slot
    assert d.kv_fragmentation_ratio(10, 250, 1) == 0.0
    # more running requests than blocks would estimate more empty slots than exist: clamped to 1
    assert d.kv_fragmentation_ratio(1000, 10, 16) == 1.0
    assert d.kv_fragmentation_ratio(0, 250, 16) == 0.0


@pytest.mark.parametrize(
    ("running", "used", "size"), [(3, 0, 16), (3, -1, 16), (3, 10, 0), (float("nan"), 10, 16)]
)
def test_kv_fragmentation_ratio_absent(running: float, used: int, size: int) -> None:
    assert d.kv_fragmentation_ratio(running, used, size) is None


def test_admission_headroom() -> None:
    # 250 blocks hold 10 requests, 25 blocks each: 750 free blocks fit 30 more.
    assert d.admission_headroom(750, 250, 10) == 30.0
    assert d.admission_headroom(0, 1000, 10) == 0.0
    assert d.admission_headroom(-3, 1000, 10) == 0.0
    assert d.admission_headroom(100, 300, 3) == 1.0


@pytest.mark.parametrize(("free", "used", "running"), [(750, 250, 0), (750, 0, 3), (750, 250, -1)])
def test_admission_headroom_absent(free: int, used: int, running: float) -> None:
    assert d.admission_headroom(free, used, running) is None


def test_allocator_fragmentation_ratio_is_a_share_of_the_unused_cache() -> None:
    gib = 1 << 30
    # the H100 measurement of docs/exporter.md: 0.85 GiB split of 1.3 GiB unused, beside 71 GiB of tensors
    assert d.allocator_fragmentation_ratio(0.85 * gib, 72.8 * gib, 71.5 * gib) == pytest.approx(0.654, abs=1e-3)
    assert d.allocator_fragmentation_ratio(2 * gib, 8 * gib, 4 * gib) == 0.5
    assert d.allocator_fragmentation_ratio(0, 8 * gib, 4 * gib) == 0.0
    assert d.allocator_fragmentation_ratio(1, 8, 8) is None  # nothing unused: nothing to fragment
    assert d.allocator_fragmentation_ratio(1, 0, 0) is None
    assert d.allocator_fragmentation_ratio(-1, 10, 0) is None


def test_lifetime_hit_ratio_prefers_counters_then_v0_gauge() -> None:
    assert d.lifetime_hit_ratio(EngineInputs(hits=30, queries=120, hit_rate_gauge=0.9)) == 0.25
    assert d.lifetime_hit_ratio(EngineInputs(hit_rate_gauge=0.35)) == 0.35
    assert d.lifetime_hit_ratio(EngineInputs(hit_rate_gauge=-1.0)) is None  # prefix caching off
    assert d.lifetime_hit_ratio(EngineInputs(hits=0, queries=0)) is None
    assert d.lifetime_hit_ratio(EngineInputs()) is None


# ---------------------------------------------------------------------------------------------------
# Joining cache_config_info


def _config(**labels: str) -> Sample:
    return Sample(labels, 1.0)


def test_cache_configs_keyed_by_engine_and_unprofiled_ones_skipped() -> None:
    configs = d.cache_configs(
        [
            _config(engine="0", num_gpu_blocks="100", block_size="16"),
            _config(engine="1", num_gpu_blocks="None", block_size="16"),
            _config(engine="2", num_gpu_blocks="0", block_size="16"),
            _config(engine="3", block_size="16"),
        ]
    )
    assert configs == {"0": CacheConfig(100, 16)}


def test_conflicting_configs_for_one_engine_join_nothing() -> None:
    configs = d.cache_configs(
        [_config(num_gpu_blocks="100", block_size="16"), _config(num_gpu_blocks="200", block_size="16")]
    )
    assert d.config_for(None, configs) is None
    assert d.config_for("0", configs) is None


def test_identical_configs_repeated_still_join() -> None:
    configs = d.cache_configs([_config(num_gpu_blocks="100", block_size="16")] * 2)
    assert d.config_for(None, configs) == CacheConfig(100, 16)


def test_config_for_rules() -> None:
    by_engine = {"0": CacheConfig(100, 16), "1": CacheConfig(200, 16)}
    assert d.config_for("1", by_engine) == CacheConfig(200, 16)
    assert d.config_for("7", by_engine) is None
    assert d.config_for(None, by_engine) is None  # which engine's? unknown
    assert d.config_for(None, {"0": CacheConfig(100, 16)}) == CacheConfig(100, 16)
    assert d.config_for("5", {None: CacheConfig(300, 32)}) == CacheConfig(
        300, 32
    )  # no engine label: applies to all


# ---------------------------------------------------------------------------------------------------
# Whole payloads


def _derived(name: str) -> dict[tuple, float]:
    """{(family, labels): value} over every engine of a fixture, windowed ratio left out."""
    inputs = d.engine_inputs(parse_needed(payload(name)).families)
    return {
        (s.name, s.labels): s.value
        for key, engine in inputs.items()
        for s in d.derive_engine(key, engine, None)
    }


def test_v1_payload() -> None:
    e = (("engine", "0"), ("model_name", "acme/llm-7b"))
    assert _derived("v1_single.prom") == {
        (d.PREFIX_CACHE_HIT_RATIO_LIFETIME, e): 0.25,
        (d.KV_CACHE_BLOCK_SIZE, e): 16.0,
        (d.KV_CACHE_BLOCKS, (*e, ("state", "used"))): 250.0,
        (d.KV_CACHE_BLOCKS, (*e, ("state", "free"))): 750.0,
        (d.KV_CACHE_FRAGMENTATION, e): pytest.approx(0.01875),
        (d.KV_CACHE_HEADROOM, e): 30.0,
    }


def test_v0_payload_uses_old_names_and_the_hit_rate_gauge() -> None:
    m = (("model_name", "facebook/opt-125m"),)
    assert _derived("v0.prom") == {
        (d.PREFIX_CACHE_HIT_RATIO_LIFETIME, m): 0.35,
        (d.KV_CACHE_BLOCK_SIZE, m): 16.0,
        (d.KV_CACHE_BLOCKS, (m[0], ("state", "used"))): 200.0,
        (d.KV_CACHE_BLOCKS, (m[0], ("state", "free"))): 1800.0,
        (d.KV_CACHE_FRAGMENTATION, m): pytest.approx(0.009375),
        (d.KV_CACHE_HEADROOM, m): 36.0,
    }


def test_v0_with_prefix_caching_off_has_no_hit_ratio() -> None:
    assert _derived("v0_prefix_caching_off.prom") == {}


def test_multiprocess_pid_series_take_the_max_and_new_names_win() -> None:
    e = (("engine", "0"), ("model_name", "m"))
    assert _derived("multiprocess.prom") == {
        (d.PREFIX_CACHE_HIT_RATIO_LIFETIME, e): 0.25,
        (d.KV_CACHE_BLOCK_SIZE, e): 32.0,
        (d.KV_CACHE_BLOCKS, (*e, ("state", "used"))): 200.0,
        (d.KV_CACHE_BLOCKS, (*e, ("state", "free"))): 300.0,
        (d.KV_CACHE_FRAGMENTATION, e): pytest.approx(0.012109375),
        (d.KV_CACHE_HEADROOM, e): 7.5,
    }


def test_data_parallel_engines_join_their_own_cache_config() -> None:
    values = _derived("data_parallel.prom")
    e0 = (("engine", "0"), ("model_name", "a"))
    e1 = (("engine", "1"), ("model_name", "a"))
    assert values[(d.KV_CACHE_BLOCKS, (*e0, ("state", "used")))] == 100.0
    assert values[(d.KV_CACHE_BLOCKS, (*e0, ("state", "free")))] == 900.0
    assert values[(d.KV_CACHE_BLOCKS, (*e1, ("state", "used")))] == 1000.0
    assert values[(d.KV_CACHE_BLOCKS, (*e1, ("state", "free")))] == 1000.0
    assert values[(d.KV_CACHE_FRAGMENTATION, e0)] == pytest.approx(0.009375)
    assert values[(d.KV_CACHE_FRAGMENTATION, e1)] == pytest.approx(0.00375)
    assert values[(d.KV_CACHE_HEADROOM, e0)] == 18.0
    assert values[(d.KV_CACHE_HEADROOM, e1)] == 8.0
    assert values[(d.PREFIX_CACHE_HIT_RATIO_LIFETIME, e0)] == 0.1
    assert values[(d.PREFIX_CACHE_HIT_RATIO_LIFETIME, e1)] == 0.75
    assert len(values) == 12


def test_two_models_share_an_engine_less_cache_config() -> None:
    values = _derived("two_models.prom")
    x, y = (("model_name", "x"),), (("model_name", "y"),)
    assert values[(d.KV_CACHE_BLOCKS, (x[0], ("state", "used")))] == 50.0
    assert values[(d.KV_CACHE_BLOCKS, (y[0], ("state", "used")))] == 250.0
    assert values[(d.KV_CACHE_HEADROOM, x)] == 45.0
    assert values[(d.KV_CACHE_HEADROOM, y)] == 25.0
    assert values[(d.KV_CACHE_BLOCK_SIZE, x)] == values[(d.KV_CACHE_BLOCK_SIZE, y)] == 8.0


def test_router_copies_are_ignored() -> None:
    assert _derived("router.prom") == {}


def test_router_lines_mixed_into_an_engine_payload_change_nothing() -> None:
    mixed = payload("router.prom") + payload("v1_single.prom")
    inputs = d.engine_inputs(parse_needed(mixed).families)
    assert list(inputs) == [EngineKey("acme/llm-7b", "0")]
    assert inputs[EngineKey("acme/llm-7b", "0")].running == 10.0


def test_escaped_model_name_survives() -> None:
    e = (("engine", "0"), ("model_name", 'my "fast", model\\v2}'))
    values = _derived("escaped_labels.prom")
    assert values[(d.KV_CACHE_BLOCKS, (*e, ("state", "used")))] == 50.0
    assert values[(d.KV_CACHE_FRAGMENTATION, e)] == pytest.approx(0.0375)
    assert values[(d.KV_CACHE_HEADROOM, e)] == 4.0


def test_new_usage_name_preferred_per_engine_old_name_fills_gaps() -> None:
    text = (
        b'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5\n'
        b'vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.9\n'
        b'vllm:gpu_cache_usage_perc{engine="1",model_name="m"} 0.7\n'
    )
    inputs = d.engine_inputs(parse_needed(text).families)
    assert inputs[EngineKey("m", "0")].kv_usage == 0.5
    assert inputs[EngineKey("m", "1")].kv_usage == 0.7


def test_old_counters_used_when_new_ones_are_missing() -> None:
    text = (
        b'vllm:gpu_prefix_cache_hits_total{engine="0",model_name="m"} 3\n'
        b'vllm:gpu_prefix_cache_queries_total{engine="0",model_name="m"} 12\n'
    )
    inputs = d.engine_inputs(parse_needed(text).families)
    assert (inputs[EngineKey("m", "0")].hits, inputs[EngineKey("m", "0")].queries) == (3.0, 12.0)


def test_non_finite_values_are_ignored() -> None:
    text = b'vllm:kv_cache_usage_perc{model_name="m"} NaN\nvllm:num_requests_running{model_name="m"} 2\n'
    inputs = d.engine_inputs(parse_needed(text).families)
    assert inputs[EngineKey("m", None)].kv_usage is None
    assert inputs[EngineKey("m", None)].running == 2.0


def test_series_absent_without_their_inputs() -> None:
    key = EngineKey("m", "0")
    # no cache config: only the hit ratios
    only_counters = EngineInputs(hits=1, queries=4, kv_usage=0.5, running=3)
    assert [s.name for s in d.derive_engine(key, only_counters, 0.5)] == [
        d.PREFIX_CACHE_HIT_RATIO,
        d.PREFIX_CACHE_HIT_RATIO_LIFETIME,
    ]
    # no usage gauge: the block size only
    no_usage = EngineInputs(cache=CacheConfig(100, 16), running=3)
    assert [s.name for s in d.derive_engine(key, no_usage, None)] == [d.KV_CACHE_BLOCK_SIZE]
    # nothing running and nothing used: blocks, but no fragmentation and no headroom
    idle = EngineInputs(cache=CacheConfig(100, 16), kv_usage=0.0, running=0)
    assert sorted((s.name, s.value) for s in d.derive_engine(key, idle, None)) == [
        (d.KV_CACHE_BLOCK_SIZE, 16.0),
        (d.KV_CACHE_BLOCKS, 0.0),
        (d.KV_CACHE_BLOCKS, 100.0),
    ]


# ---------------------------------------------------------------------------------------------------
# Absurd values: never a negative or impossible block count, never an overflow


@pytest.mark.parametrize(
    ("usage", "blocks"),
    [
        (1 - 2**-53, 2**53 + 3),  # float rounding: round(usage * blocks) was blocks + 1, so free was -1
        (1.0, 2**53 + 3),
        (0.9999999, 10**30),
        (1 - 2**-53, 10**30 + 1),
        (float("nan"), 1000),
        (float("inf"), 1000),
        (float("-inf"), 1000),
        (-1e300, 1000),
    ],
)
def test_kv_blocks_stay_within_zero_and_the_total(usage: float, blocks: int) -> None:
    used, free = d.kv_blocks(usage, blocks)
    assert 0 <= used <= blocks
    assert 0 <= free <= blocks
    assert used + free == blocks


@pytest.mark.parametrize("blocks", [0, -5])
def test_kv_blocks_of_no_blocks_are_zero(blocks: int) -> None:
    assert d.kv_blocks(0.5, blocks) == (0, 0)


@pytest.mark.parametrize(
    "value", ["1e30", "-5", "0", "NaN", "+Inf", "1" + "0" * 400, str(2**53 + 1), "9" * 5000, "None", ""]
)
def test_absurd_cache_config_values_are_not_believed(value: str) -> None:
    for field in ("num_gpu_blocks", "block_size"):
        labels = {"num_gpu_blocks": "1000", "block_size": "16", field: value}
        assert d.cache_configs([Sample(labels, 1.0)]) == {}


def test_largest_believed_cache_config_value() -> None:
    labels = {"num_gpu_blocks": str(2**53), "block_size": "16"}
    assert d.cache_configs([Sample(labels, 1.0)]) == {None: CacheConfig(2**53, 16)}


def test_headroom_that_overflows_is_left_out() -> None:
    assert d.admission_headroom(750, 250, 1e308) is None
    assert d.admission_headroom(750, 250, 1e300) == pytest.approx(3e300)
