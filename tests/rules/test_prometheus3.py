"""Prometheus 3 safety of the rendered pack, rules and panels alike.

Prometheus 3 normalises `le` and `quantile` label values on ingest (`le="1"` is stored as `le="1.0"`),
so a matcher on an integer spelling finds nothing; and its range windows are left-open, so a window
shorter than two scrape intervals can hold a single sample and `rate`/`increase` return nothing.
Dashboards' `$__rate_interval` is left to Grafana, which makes it at least four scrape intervals.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from obspack.config import ObspackConfig
from obspack.pack import Dashboard, build
from obspack.pack.walk import prometheus3_problems
from obspack.rules.model import RecordingRule, RuleGroup
from tests.support.packs import CONFIGS, config_of, pack


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_the_pack_is_safe_on_prometheus_3(config: str) -> None:
    assert prometheus3_problems(pack(config), config_of(config).scrape_interval) == []


def test_the_pack_is_safe_at_the_slowest_scrape_interval_the_config_allows() -> None:
    slowest = ObspackConfig(scrape_interval="2m30s")  # the most the config allows
    assert prometheus3_problems(build(slowest), slowest.scrape_interval) == []


def test_the_check_finds_integer_bucket_matchers_in_rules_and_panels() -> None:
    p = pack("defaults")
    rule = RecordingRule("a:b:sum", 'sum(rate(x_bucket{le="1"}[5m])) + on () y{quantile=~"0.5|1"}')
    panel = {"title": "p99", "panels": [], "targets": [{"expr": 'x_bucket{le="+Inf"} - x_bucket{le="10"}'}]}
    bad = replace(
        p,
        recording_groups=(RuleGroup("bad.rules", (rule,)),),
        dashboards=(Dashboard("d", "D", "d", {"panels": [panel]}),),
    )
    found = prometheus3_problems(bad, "1m")
    assert len(found) == 3, found
    assert {'le="1"', 'quantile=~"0.5|1"', 'le="10"'} == {f.split(": ")[1].split(" ")[0] for f in found}


def test_the_check_finds_windows_shorter_than_two_scrape_intervals() -> None:
    p = pack("custom")
    found = prometheus3_problems(p, "3m")  # 5m is under twice 3m, 10m is not
    assert found and all("over 5m is shorter than twice" in f for f in found)
    assert any("VLLMZeroThroughput" in f for f in prometheus3_problems(p, "6m"))  # its window is 10m
