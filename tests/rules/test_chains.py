"""Live timing: every alert is at most one rule-group boundary from raw series, every dashboard target two.

On a live Prometheus each group runs on its own timer, so each boundary can add one evaluation interval
of delay (docs/rules.md, "Live timing"). The depths are computed on the rendered rules and dashboards for
the default config and a changed one (tests/support/chains.py); the rendered promtool tests check the
same from the other side, with the group order reversed (tests/rules/test_promtool.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from obspack.config import ObspackConfig, load_config
from obspack.pack import Pack, build
from obspack.promql import metric_names
from obspack.rules.model import RecordingRule, RuleGroup
from tests.support.chains import Chains, dashboard_targets

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PACKS = {"defaults": build(ObspackConfig()), "custom": build(load_config(FIXTURES / "custom.yaml"))}
ALERT_HOPS = 1
DASHBOARD_HOPS = 2


def _chains(pack: Pack) -> Chains:
    return Chains([*pack.recording_groups, *pack.alert_groups])


@pytest.mark.parametrize("config", sorted(PACKS))
def test_every_alert_is_at_most_one_group_hop_from_raw_series(config: str) -> None:
    pack = PACKS[config]
    chains = _chains(pack)
    depths = {rule.alert: chains.of(rule.alert) for group in pack.alert_groups for rule in group.rules}
    print(f"\n{config}: group hops from raw series per alert")
    for alert, depth in sorted(depths.items()):
        print(f"  {depth}  {alert}")
    deep = {a: " -> ".join(chains.path(a)) for a, d in depths.items() if d > ALERT_HOPS}
    assert not deep, deep
    assert len(depths) >= 10, "the pack's alerts were not all found"


@pytest.mark.parametrize("config", sorted(PACKS))
def test_every_dashboard_target_is_at_most_two_group_hops_from_raw_series(config: str) -> None:
    pack = PACKS[config]
    chains = _chains(pack)
    targets = dashboard_targets((d.name, d.model) for d in pack.dashboards)
    depths = {where: chains.of_query(expr) for where, expr in targets}
    deep = {where: depth for where, depth in depths.items() if depth > DASHBOARD_HOPS}
    assert not deep, deep
    assert len(targets) > 100 and max(depths.values()) == DASHBOARD_HOPS


def test_every_record_is_read_by_an_alert_a_dashboard_or_another_record() -> None:
    """A record nobody reads is series a user pays for and never sees."""
    pack = PACKS["defaults"]
    read: set[str] = set()
    for group in (*pack.recording_groups, *pack.alert_groups):
        for rule in group.rules:
            read |= metric_names(rule.expr) - {getattr(rule, "record", None)}
    for _, expr in dashboard_targets((d.name, d.model) for d in pack.dashboards):
        read |= metric_names(expr)
    records = {r.record for g in pack.recording_groups for r in g.rules}  # type: ignore[union-attr]
    assert records - read == set()


def _group(name: str, *rules: tuple[str, str]) -> RuleGroup:
    return RuleGroup(name, tuple(RecordingRule(record, expr) for record, expr in rules))


def test_the_count_sees_hops_across_groups_and_not_within_one() -> None:
    """The measure itself: a record made earlier in the same group is free, any other one costs a hop."""
    chains = Chains(
        [
            _group("a", ("a:one:sum", "sum(raw_metric)"), ("a:two:sum", "a:one:sum * 2")),
            _group("b", ("b:three:sum", "a:two:sum + raw_metric"), ("b:early:sum", "b:late:sum"), ("b:late:sum", "vector(1)")),
            _group("c", ("c:four:sum", "b:three:sum")),
        ]
    )
    assert [chains.of(n) for n in ("a:one:sum", "a:two:sum", "b:three:sum", "c:four:sum")] == [0, 0, 1, 2]
    assert chains.of("b:early:sum") == 1, "a record made later in the same group is one evaluation old"
    assert chains.of_query("rate(c:four:sum[5m]) / raw_metric") == 3
    assert chains.path("c:four:sum") == ["a/a:one:sum", "a/a:two:sum", "b/b:three:sum", "c/c:four:sum"]
