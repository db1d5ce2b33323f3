"""Pure functions from parsed vLLM samples to the exporter's derived series.

Every formula the exporter publishes is one small function here, so each can be tested on numbers.
``engine_inputs`` gathers, per (model_name, engine), the few values the formulas need, and
``derive_engine`` turns them into ``Derived`` samples. Nothing here keeps state or does I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from obspack.exporter import parse as p
from obspack.exporter.parse import Sample

PREFIX_CACHE_HIT_RATIO = "obspack_vllm_prefix_cache_hit_ratio"
PREFIX_CACHE_HIT_RATIO_LIFETIME = "obspack_vllm_prefix_cache_hit_ratio_lifetime"
KV_CACHE_BLOCKS = "obspack_vllm_kv_cache_blocks"
KV_CACHE_BLOCK_SIZE = "obspack_vllm_kv_cache_block_size_tokens"
KV_CACHE_FRAGMENTATION = "obspack_vllm_kv_cache_fragmentation_ratio"
KV_CACHE_HEADROOM = "obspack_vllm_kv_cache_admission_headroom_requests"

Labels = tuple[tuple[str, str], ...]


class EngineKey(NamedTuple):
    """One vLLM engine: the served model and the data-parallel engine index (None before vLLM 0.8.3).

    A named tuple, not a frozen dataclass: it is built and hashed for every needed line of every scrape,
    and a tuple's hash and equality run in C (a dataclass's are generated Python)."""

    model_name: str
    engine: str | None

    def labels(self) -> Labels:
        """The labels this engine's derived series carry."""
        if self.engine is None:
            return (("model_name", self.model_name),)
        return (("engine", self.engine), ("model_name", self.model_name))


@dataclass(frozen=True, slots=True)
class CacheConfig:
    """The two attributes of ``vllm:cache_config_info`` the formulas use."""

    num_gpu_blocks: int
    block_size: int


@dataclass(slots=True)
class EngineInputs:
    """What one engine's payload says, after picking the preferred name of each value."""

    running: float | None = None
    kv_usage: float | None = None
    hits: float | None = None
    queries: float | None = None
    hit_rate_gauge: float | None = None
    cache: CacheConfig | None = None


class Derived(NamedTuple):
    """One derived sample: family name, labels (without ``target``) and value (a named tuple, for speed,
    as ``EngineKey``)."""

    name: str
    labels: Labels
    value: float


# ---------------------------------------------------------------------------------------------------
# The formulas


def hit_ratio(hits: float, queries: float) -> float | None:
    """hits / queries, clamped to [0, 1]; None when nothing was queried."""
    if not queries > 0 or not math.isfinite(hits) or not math.isfinite(queries):
        return None
    return _clamp01(hits / queries)


def kv_blocks(usage: float, num_gpu_blocks: int) -> tuple[int, int]:
    """(used, free) KV blocks from the usage fraction and the block count, rounded to whole blocks.

    Both are within [0, num_gpu_blocks] (0, 0 for a count that is not positive): float rounding of
    a usage near 1 times a count above 2**53 could otherwise give more used blocks than exist.
    A NaN usage counts as 0.
    """
    if num_gpu_blocks <= 0:
        return 0, 0
    fraction = _clamp01(usage) if usage == usage else 0.0
    used = min(max(round(fraction * num_gpu_blocks), 0), num_gpu_blocks)
    return used, num_gpu_blocks - used


def kv_fragmentation_ratio(running: float, used_blocks: int, block_size: int) -> float | None:
    """Expected share of used KV slots left empty in the running requests' partly filled last blocks.

    Each running request owns one last block that is, on average, half empty: (block_size - 1) / 2
    empty slots if its length is uniform modulo block_size. Over all used slots that is
    running * (block_size - 1) / 2 / (used_blocks * block_size), clamped to [0, 1].
    None when no block is used.
    """
    if used_blocks <= 0 or block_size <= 0 or not running >= 0:
        return None
    return _clamp01(running * (block_size - 1) / 2 / (used_blocks * block_size))


def admission_headroom(free_blocks: int, used_blocks: int, running: float) -> float | None:
    """How many more requests of today's average size fit: free / (used / running).

    None when nothing runs or no block is used (there is no average size to divide by).
    """
    if not running > 0 or used_blocks <= 0:
        return None
    headroom = max(free_blocks, 0) / (used_blocks / running)
    return headroom if math.isfinite(headroom) else None


def allocator_fragmentation_ratio(
    inactive_split_bytes: float, reserved_bytes: float, allocated_bytes: float
) -> float | None:
    """Share of the memory the CUDA allocator holds but no tensor uses (reserved - allocated) that sits in
    inactive split blocks; None when it holds none unused.

    Not a share of all reserved memory: in vLLM the weights and the KV cache are most of it (70.5 of 71.4 GiB
    on an 80 GiB H100 at the default --gpu-memory-utilization), so that share stays near 1% even when every
    unused block is split (docs/exporter.md, "On a real GPU")."""
    unused = reserved_bytes - allocated_bytes
    if not unused > 0 or not inactive_split_bytes >= 0:
        return None
    return _clamp01(inactive_split_bytes / unused)


def lifetime_hit_ratio(inputs: EngineInputs) -> float | None:
    """Hit ratio since the engine started: from the counters, else V0's gauge (-1 there means disabled)."""
    if inputs.hits is not None and inputs.queries is not None:
        return hit_ratio(inputs.hits, inputs.queries)
    gauge = inputs.hit_rate_gauge
    if gauge is None or not 0 <= gauge <= 1:
        return None
    return gauge


def _clamp01(value: float) -> float:
    return min(max(value, 0.0), 1.0)


# ---------------------------------------------------------------------------------------------------
# From parsed families to per-engine inputs


def engine_inputs(families: Mapping[str, Sequence[Sample]]) -> dict[EngineKey, EngineInputs]:
    """Gather the inputs of every engine found in one target's payload.

    Series without ``model_name`` are ignored (production-stack router copies carry ``server``
    instead). Several series of one engine (multiprocess ``pid`` labels) are combined: gauges by
    max, counters by sum. New names win over old ones when a payload has both.
    """
    gauge = _combine(families, max)
    counter = _combine(families, sum)
    running = gauge(p.NUM_REQUESTS_RUNNING)
    usage = _prefer(gauge(p.KV_CACHE_USAGE), gauge(p.GPU_CACHE_USAGE))
    hits_new, queries_new = counter(p.PREFIX_CACHE_HITS), counter(p.PREFIX_CACHE_QUERIES)
    hits_old, queries_old = counter(p.GPU_PREFIX_CACHE_HITS), counter(p.GPU_PREFIX_CACHE_QUERIES)
    rate_gauge = gauge(p.GPU_PREFIX_CACHE_HIT_RATE)
    configs = cache_configs(families.get(p.CACHE_CONFIG_INFO, ()))

    keys = set(running) | set(usage) | set(hits_new) | set(queries_new) | set(hits_old)
    keys |= set(queries_old) | set(rate_gauge)
    result: dict[EngineKey, EngineInputs] = {}
    for key in keys:
        inputs = EngineInputs(
            running=running.get(key),
            kv_usage=usage.get(key),
            hit_rate_gauge=rate_gauge.get(key),
            cache=config_for(key.engine, configs),
        )
        if key in hits_new and key in queries_new:
            inputs.hits, inputs.queries = hits_new[key], queries_new[key]
        elif key in hits_old and key in queries_old:
            inputs.hits, inputs.queries = hits_old[key], queries_old[key]
        result[key] = inputs
    return result


def _combine(
    families: Mapping[str, Sequence[Sample]], reduce: Callable[[list[float]], float]
) -> Callable[[str], dict[EngineKey, float]]:
    """Build a reader that maps a family to {engine: reduced finite value} over its model_name series."""

    def read(name: str) -> dict[EngineKey, float]:
        grouped: dict[EngineKey, list[float]] = {}
        for sample in families.get(name, ()):
            model = sample.labels.get("model_name")
            if not model or not math.isfinite(sample.value):
                continue
            key = EngineKey(model, sample.labels.get("engine"))
            grouped.setdefault(key, []).append(sample.value)
        return {key: reduce(values) for key, values in grouped.items()}

    return read


def _prefer(new: dict[EngineKey, float], old: dict[EngineKey, float]) -> dict[EngineKey, float]:
    """Per engine, the value under the new name when present, else the old one."""
    return {**old, **new}


_AMBIGUOUS = CacheConfig(num_gpu_blocks=-1, block_size=-1)
MAX_CONFIG_VALUE = 2**53
"""Largest ``num_gpu_blocks`` or ``block_size`` believed: every integer up to it is exact as a float."""


def cache_configs(samples: Sequence[Sample]) -> dict[str | None, CacheConfig]:
    """Read ``vllm:cache_config_info`` series, keyed by their ``engine`` label (None when absent).

    Series whose ``num_gpu_blocks`` or ``block_size`` is not an integer from 1 to ``MAX_CONFIG_VALUE``
    are skipped: ``"None"`` before the KV cache is profiled, and absurd values such as ``1e30`` or
    400 digits. Two different configs under one key cannot be joined to the right model, so that
    key is marked ambiguous and joins nothing.
    """
    configs: dict[str | None, CacheConfig] = {}
    for sample in samples:
        try:
            config = CacheConfig(int(sample.labels["num_gpu_blocks"]), int(sample.labels["block_size"]))
        except (KeyError, ValueError):
            continue
        if not (0 < config.num_gpu_blocks <= MAX_CONFIG_VALUE and 0 < config.block_size <= MAX_CONFIG_VALUE):
            continue
        engine = sample.labels.get("engine")
        if configs.get(engine, config) != config:
            config = _AMBIGUOUS
        configs[engine] = config
    return configs


def config_for(engine: str | None, configs: Mapping[str | None, CacheConfig]) -> CacheConfig | None:
    """The cache config of ``engine``: the one with its engine label, else the one without any label.

    An engine-less engine (V0, or V1 before 0.8.3) also takes the only config when there is one.
    """
    if engine is not None and engine in configs:
        found = configs[engine]
    elif None in configs:
        found = configs[None]
    elif engine is None and len(configs) == 1:
        found = next(iter(configs.values()))
    else:
        return None
    return None if found is _AMBIGUOUS else found


# ---------------------------------------------------------------------------------------------------
# From inputs to derived samples


def derive_engine(key: EngineKey, inputs: EngineInputs, windowed_hit_ratio: float | None) -> list[Derived]:
    """Every derived sample of one engine; a series is left out when its inputs are missing."""
    labels = key.labels()
    out: list[Derived] = []

    def add(name: str, value: float | None, extra: Labels = ()) -> None:
        if value is not None:  # the engine's labels come sorted: only added ones need a sort
            out.append(Derived(name, tuple(sorted(labels + extra)) if extra else labels, float(value)))

    add(PREFIX_CACHE_HIT_RATIO, windowed_hit_ratio)
    add(PREFIX_CACHE_HIT_RATIO_LIFETIME, lifetime_hit_ratio(inputs))
    cache = inputs.cache
    if cache is None:
        return out
    add(KV_CACHE_BLOCK_SIZE, cache.block_size)
    if inputs.kv_usage is None:
        return out
    used, free = kv_blocks(inputs.kv_usage, cache.num_gpu_blocks)
    add(KV_CACHE_BLOCKS, used, (("state", "used"),))
    add(KV_CACHE_BLOCKS, free, (("state", "free"),))
    if inputs.running is not None:
        add(KV_CACHE_FRAGMENTATION, kv_fragmentation_ratio(inputs.running, used, cache.block_size))
        add(KV_CACHE_HEADROOM, admission_headroom(free, used, inputs.running))
    return out
