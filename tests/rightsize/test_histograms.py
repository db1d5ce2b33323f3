"""Quantiles and shares from cumulative buckets, interpolated as histogram_quantile does."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from obspack.rightsize import histograms as h


def test_a_quantile_interpolates_linearly_inside_its_bucket() -> None:
    buckets = h.cumulative([(5000.0, 998.0), (10000.0, 1000.0), (math.inf, 1000.0), (2000.0, 800.0)])
    assert h.quantile(0.999, buckets) == 7500
    assert h.quantile(0.5, buckets) == 1250  # the first bucket starts at 0
    assert h.max_bound(buckets) == 10000 and h.highest_finite(buckets) == 10000


def test_observations_above_the_highest_bound_give_that_bound_and_an_open_maximum() -> None:
    buckets = h.cumulative([(100.0, 50.0), (math.inf, 100.0)])
    assert h.quantile(0.99, buckets) == 100 and h.max_bound(buckets) == math.inf


def test_broken_input_gives_nothing_rather_than_a_number() -> None:
    assert h.cumulative([(100.0, 5.0)]) == ()  # no +Inf bucket
    assert h.cumulative([(100.0, 0.0), (math.inf, 0.0)]) == ()  # no observation
    assert h.quantile(0.5, ()) is None and h.max_bound(()) is None
    dipped = h.cumulative([(10.0, 6.0), (20.0, 5.0), (math.inf, 8.0)])  # a reset counter's rate can dip
    assert [count for _, count in dipped] == [6.0, 6.0, 8.0]


@given(
    st.lists(st.integers(min_value=0, max_value=1000), min_size=2, max_size=12),
    st.floats(min_value=0.01, max_value=0.99),
)
def test_share_above_is_the_complement_of_the_quantile(counts: list[int], q: float) -> None:
    total = sum(counts)
    if total == 0:
        return
    running, pairs = 0, []
    for i, count in enumerate(counts):
        running += count
        pairs.append((float(10 * (i + 1)), float(running)))
    pairs.append((math.inf, float(running)))
    buckets = h.cumulative(pairs)
    x = h.quantile(q, buckets)
    assert x is not None
    assert h.share_above(x, buckets) == pytest.approx(1 - q, abs=1e-9)
