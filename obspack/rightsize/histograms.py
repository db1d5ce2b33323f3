"""Quantiles and shares from cumulative histogram buckets, interpolated as Prometheus' histogram_quantile does.

vLLM's token histograms (prompt, generation, tokens per engine step) are summed over a workload's pods here,
not on the server, so one query per family serves every workload. Buckets are `(le, cumulative count)`
pairs with `+Inf` last; vLLM's bounds follow 1-2-5 steps up to max_model_len and may be overridden from 0.32,
so nothing here assumes fixed bounds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

Buckets = tuple[tuple[float, float], ...]


def cumulative(pairs: Iterable[tuple[float, float]]) -> Buckets:
    """Sorted by bound, with counts made non-decreasing (rates of separately reset counters can dip, as
    histogram_quantile also repairs); empty when there is no `+Inf` bucket or no observation."""
    ordered = sorted((le, count) for le, count in pairs if not math.isnan(le) and math.isfinite(count))
    if not ordered or not math.isinf(ordered[-1][0]) or ordered[-1][1] <= 0:
        return ()
    out: list[tuple[float, float]] = []
    highest = 0.0
    for le, count in ordered:
        highest = max(highest, count)
        out.append((le, highest))
    return tuple(out)


def total(buckets: Buckets) -> float:
    return buckets[-1][1] if buckets else 0.0


def quantile(q: float, buckets: Buckets) -> float | None:
    """The q-quantile, linear within its bucket; in the `+Inf` bucket, the highest finite bound."""
    if not buckets or not 0 <= q <= 1:
        return None
    rank = q * total(buckets)
    lower, below = 0.0, 0.0
    for le, count in buckets:
        if count >= rank and count > below:
            if math.isinf(le):
                return lower
            return lower + (le - lower) * (rank - below) / (count - below)
        lower, below = le, count
    return lower


def share_above(x: float, buckets: Buckets) -> float:
    """The share of observations above x, linear within its bucket (the inverse of `quantile`)."""
    if not buckets:
        return 0.0
    lower, below = 0.0, 0.0
    for le, count in buckets:
        if x < le:
            if math.isinf(le):
                return 1 - below / total(buckets)
            at = below + (count - below) * max(0.0, x - lower) / (le - lower)
            return 1 - at / total(buckets)
        lower, below = le, count
    return 0.0


def max_bound(buckets: Buckets) -> float | None:
    """The smallest bound at or under which every observation lies (math.inf: some lie above the highest
    finite bound); None without observations."""
    if not buckets:
        return None
    return next(le for le, count in buckets if count >= total(buckets))


def highest_finite(buckets: Buckets) -> float | None:
    finite = [le for le, _ in buckets if math.isfinite(le)]
    return max(finite) if finite else None
