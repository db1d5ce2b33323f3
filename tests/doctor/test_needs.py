"""What the pack needs, read from its PromQL: the semantics of each operator, records read through their
rules, and that nothing about the pack is hard-coded (a pack of made-up rules is read the same way)."""

from __future__ import annotations

import dataclasses

import promql_parser
import pytest

from obspack.config import ObspackConfig, Severity
from obspack.doctor.needs import (
    NOTHING,
    AllOf,
    AnyOf,
    CannotInline,
    Leaf,
    Record,
    Selector,
    leaves,
    matches,
    needs_of,
    read_pack,
    record_refs,
)
from obspack.render.bundle import build
from obspack.rules.model import AlertRule, RecordingRule, RuleGroup

RECORDS = frozenset({"ns:rec:max"})


def need(expr: str):
    return needs_of(promql_parser.parse(expr), RECORDS)


def leaf(metric: str, *matchers: tuple[str, str, str], window: int | None = None) -> Leaf:
    return Leaf(Selector(metric, tuple(sorted(matchers))), window)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("a or b", AnyOf((leaf("a"), leaf("b")))),
        ("a and on (x) b", AllOf((leaf("a"), leaf("b")))),
        ("a / on (x) group_left (y) b", AllOf((leaf("a"), leaf("b")))),
        ("a unless b", leaf("a")),
        ("absent(a)", NOTHING),
        ("a or vector(0)", NOTHING),
        ('sum by (x) (rate(a{job="v"}[5m])) > 0.9', leaf("a", ("job", "=", "v"), window=300)),
        ('a{pod=~".*", ns!=""}', leaf("a", ("ns", "!=", ""))),
        ('label_replace(a, "b", "$1", "c", "(.+)")', leaf("a")),
        ("topk by (x) (1, a) or (b + on (x) c)", AnyOf((leaf("a"), AllOf((leaf("b"), leaf("c")))))),
        ('ns:rec:max{pod=~"p"} * 2', Record("ns:rec:max", Selector("ns:rec:max", (("pod", "=~", "p"),)))),
        ("max_over_time(a[1h:1m])", leaf("a")),
    ],
)
def test_operators(expr: str, expected) -> None:
    assert need(expr) == expected


@pytest.mark.parametrize(
    ("matcher", "value", "found"),
    [
        (("pod", "=~", "a.*"), "abc", True),
        (("pod", "=~", "b"), "abc", False),  # anchored, as Prometheus does
        (("pod", "!=", ""), "", False),  # a missing label reads as ""
        (("pod", "!~", ".+"), "", True),
        (("pod", "=~", "("), "(", False),  # an invalid regex matches nothing
    ],
)
def test_matchers_as_prometheus_applies_them(matcher, value: str, found: bool) -> None:
    assert matches(matcher, value) is found


def test_every_rule_of_the_pack_reads_raw_series_or_records_of_the_pack() -> None:
    needs = read_pack(build(ObspackConfig()))
    for rule in [*needs.records.values(), *needs.alerts]:
        assert all(x.selector.metric not in needs.records for x in leaves(rule.need)), rule.name
        assert all(r.name in needs.records for r in record_refs(rule.need)), rule.name
    for name in needs.records:
        written = needs_of(promql_parser.parse(needs.inline(name)), frozenset(needs.records))
        assert not list(record_refs(written)), f"{name} still reads a record once written out"


def test_a_pack_of_made_up_rules_is_read_from_what_build_returns() -> None:
    made_up = dataclasses.replace(
        build(ObspackConfig()),
        recording_groups=(
            RuleGroup("base", (RecordingRule("x:foo:sum", 'sum by (x) (foo{job="f"})'),)),
            RuleGroup("derived", (RecordingRule("x:foo:ratio", "x:foo:sum / on (x) bar"),)),
        ),
        alert_groups=(
            RuleGroup(
                "alerts",
                (AlertRule("FooHigh", "x:foo:ratio > 1 unless baz", "5m", Severity.WARNING, "s", "d", "r"),),
            ),
        ),
        dashboards=(),
    )
    needs = read_pack(made_up)
    assert [a.name for a in needs.alerts] == ["FooHigh"]
    assert needs.alerts[0].need == Record("x:foo:ratio", Selector("x:foo:ratio"))
    assert needs.records["x:foo:ratio"].need == AllOf(
        (Record("x:foo:sum", Selector("x:foo:sum")), leaf("bar"))
    )
    inlined = promql_parser.parse(needs.inline("x:foo:ratio")).prettify()
    assert inlined == promql_parser.parse('(sum by (x) (foo{job="f"})) / on (x) bar').prettify()


def test_a_record_read_with_matchers_inside_a_rule_cannot_be_written_out() -> None:
    pack = dataclasses.replace(
        build(ObspackConfig()),
        recording_groups=(
            RuleGroup(
                "g", (RecordingRule("x:a:sum", "sum(a)"), RecordingRule("x:b:sum", 'x:a:sum{pod="p"}'))
            ),
        ),
    )
    with pytest.raises(CannotInline, match="matchers"):
        read_pack(pack).inline("x:b:sum")


def test_dashboards_filter_records_on_the_configured_cluster_label() -> None:
    needs = read_pack(build(ObspackConfig(cluster_label="k8s_cluster")))
    filtered = {name: labels for name, labels in needs.record_labels().items() if labels}
    assert filtered, "dashboards filter records by their variables"
    assert all("k8s_cluster" in labels and "cluster" not in labels for labels in filtered.values())
