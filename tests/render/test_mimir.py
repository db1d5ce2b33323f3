"""Mimir ruler namespaces: the Prometheus groups within Mimir's default limits, split without a new hop."""

from __future__ import annotations

import re

import pytest

from obspack.errors import RenderError
from obspack.render import mimir
from obspack.rules.model import RecordingRule, RuleGroup
from tests.support.chains import Chains
from tests.support.packs import CONFIGS, pack

RECORD_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*:[a-zA-Z0-9_]+:[a-zA-Z0-9_]+$")  # `mimirtool rules check`


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_namespaces_hold_the_prometheus_groups_within_the_limits(config: str) -> None:
    p = pack(config)
    files = mimir.mimir_files(p)
    assert sorted(files) == [f"mimir/{mimir.ALERTS_NAMESPACE}.yaml", f"mimir/{mimir.RECORDING_NAMESPACE}.yaml"]
    expected = {mimir.RECORDING_NAMESPACE: p.recording_groups, mimir.ALERTS_NAMESPACE: p.alert_groups}
    for namespace, groups in expected.items():
        doc = files[f"mimir/{namespace}.yaml"]
        assert doc["namespace"] == namespace
        assert doc["groups"] == [g.to_dict() for g in groups], "no group of the pack needs a split today"
    every = [g for doc in files.values() for g in doc["groups"]]  # type: ignore[attr-defined]
    assert len(every) <= mimir.MAX_GROUPS_PER_TENANT
    assert max(len(g["rules"]) for g in every) <= mimir.MAX_RULES_PER_GROUP
    records = [r["record"] for g in every for r in g["rules"] if "record" in r]
    assert records and all(RECORD_NAME.match(r) for r in records), records


def _record(i: int, expr: str = "vector(1)") -> RecordingRule:
    return RecordingRule(f"level:r{i}:sum", expr)


def test_a_big_group_is_cut_along_its_chains_in_order() -> None:
    """45 rules, where r30 reads r2 and r31 reads r30: the chain r2-r30-r31 stays in one part, records
    before readers, so every rule keeps its hop count."""
    rules = [_record(i) for i in range(45)]
    rules[30] = _record(30, "level:r2:sum * 2")
    rules[31] = _record(31, "level:r30:sum + 1")
    group = RuleGroup("big.rules", tuple(rules), interval="30s")
    parts = mimir.split(group)
    assert [p.name for p in parts] == ["big.rules.1", "big.rules.2", "big.rules.3"]
    assert all(len(p.rules) <= mimir.MAX_RULES_PER_GROUP and p.interval == "30s" for p in parts)
    assert sorted(r.record for p in parts for r in p.rules) == sorted(r.record for r in rules)
    names = [[r.record for r in p.rules] for p in parts]
    home = next(n for n in names if "level:r2:sum" in n)
    assert home.index("level:r2:sum") < home.index("level:r30:sum") < home.index("level:r31:sum")
    before, after = Chains([group]), Chains(parts)
    assert all(before.of(r.record) == after.of(r.record) for r in rules)


def test_a_group_within_the_limit_is_left_alone() -> None:
    group = RuleGroup("small.rules", tuple(_record(i) for i in range(mimir.MAX_RULES_PER_GROUP)))
    assert mimir.split(group) == [group]


def test_a_chain_longer_than_the_limit_is_an_error() -> None:
    rules = [_record(0)] + [_record(i, f"level:r{i - 1}:sum + 1") for i in range(1, 21)]
    with pytest.raises(RenderError, match="21 rules read each other in one chain"):
        mimir.split(RuleGroup("chain.rules", tuple(rules)))


def test_more_groups_than_a_tenant_may_hold_is_an_error() -> None:
    p = pack("defaults")
    many = tuple(RuleGroup(f"g{i}.rules", (_record(i),)) for i in range(mimir.MAX_GROUPS_PER_TENANT))
    with pytest.raises(RenderError, match="over its default of 70 per tenant"):
        mimir.mimir_files(type(p)(**{**p.__dict__, "recording_groups": many}))
