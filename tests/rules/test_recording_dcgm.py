"""The GPU plane's recording groups: source matchers, the cost shape that keeps them fast, the joins."""

from __future__ import annotations

import re
from pathlib import Path

import promql_parser
import pytest

from obspack import conventions as c
from obspack.config import load_config
from obspack.rules.recording import all_recording_groups, dcgm

CUSTOM = load_config(Path(__file__).resolve().parents[1] / "fixtures" / "custom.yaml")
RAW_DCGM = re.compile(r"\bDCGM_FI_\w+")


def _rules() -> list[tuple[str, str, str]]:
    return [(g.name, r.record, r.expr) for g in dcgm.groups(CUSTOM) for r in g.rules]  # type: ignore[union-attr]


def test_every_raw_dcgm_read_carries_the_configured_matchers() -> None:
    reads = 0
    for _, record, expr in _rules():
        for m in RAW_DCGM.finditer(expr):
            reads += 1
            assert expr[m.end() :].startswith('{job=~"nvidia-dcgm-exporter"'), (record, expr)
    assert reads >= len(dcgm.FIELDS) + 3  # every field, and the attribution's three label modes


def test_rules_over_every_gpu_sit_at_most_three_to_a_group_and_raw_reads_two() -> None:
    """Each rule costs 0.1-0.5 s at 8,000 GPUs; the rules of a group run one after the other."""
    raw: dict[str, int] = {}
    rules: dict[str, int] = {}
    for group, _, expr in _rules():
        raw[group] = raw.get(group, 0) + bool(RAW_DCGM.search(expr))
        rules[group] = rules.get(group, 0) + 1
    assert max(raw.values()) <= 2, raw
    assert max(rules.values()) <= 3, rules
    assert sum(raw.values()) == len(dcgm.FIELDS) + 1


def test_groups_come_after_the_records_they_read_in_the_rule_file() -> None:
    """promtool unit tests evaluate groups in file order; readers after writers keep them one step apart."""
    order = [r.record for g in all_recording_groups(CUSTOM) for r in g.rules]  # type: ignore[union-attr]
    for group in dcgm.groups(CUSTOM):
        for rule in group.rules:
            for name in re.findall(r"\b[a-z_]+:[a-z_]+:[a-z_0-9]+\b", rule.expr):  # type: ignore[union-attr]
                assert order.index(name) < order.index(rule.record), (rule.record, name)  # type: ignore[union-attr]


@pytest.mark.parametrize("field", dcgm.FIELDS, ids=lambda f: f.record)
def test_field_records_carry_the_gpu_page_labels(field: dcgm.Field) -> None:
    expr = promql_parser.parse(dcgm.field_expr(CUSTOM, field))
    outer = expr.rhs if isinstance(expr, promql_parser.BinaryExpr) else expr  # `1048576 * max by (...)`
    assert isinstance(outer, promql_parser.AggregateExpr)
    assert list(outer.modifier.labels) == [CUSTOM.cluster_label, *dcgm.WORKLOAD_GPU_LABELS]


def test_per_pod_framebuffer_records_keep_their_labels() -> None:
    """Alerts, the triage page and users' own queries read these three: their labels must not move."""
    derived = {r.record: r.expr for r in dcgm.per_pod(CUSTOM)}
    for record in (c.GPU_FB_USED, c.GPU_FB_FREE, c.GPU_FB_RATIO):
        assert derived[record].startswith(f"max by (k8s_cluster, {', '.join(dcgm.GPU_LABELS)}) ("), record
