"""What the pack needs, read from its PromQL: the semantics of each operator, records read through their
rules, and that nothing about the pack is hard-coded (a pack of made-up rules is read the same way)."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import promql_parser
import pytest
import yaml

from obspack import conventions as c
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
from obspack.pack import build
from obspack.promql import grafana_to_promql
from obspack.rules.model import AlertRule, RecordingRule, RuleGroup
from obspack.slos import SLIS
from tests.support.tools import require_tool

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


PER_MODEL = ObspackConfig.model_validate(
    {"slos": {"models": [{"model_regex": "Qwen/.*", "time_to_first_token": {"threshold": 5}}]}}
)


@pytest.mark.parametrize("cfg", [ObspackConfig(), PER_MODEL], ids=["defaults", "per-model SLOs"])
def test_every_rule_of_the_pack_reads_raw_series_or_records_of_the_pack(cfg: ObspackConfig) -> None:
    needs = read_pack(build(cfg))
    for rule in [*needs.recording_rules, *needs.alerts]:
        assert all(x.selector.metric not in needs.records for x in leaves(rule.need)), rule.name
        assert all(r.name in needs.records for r in record_refs(rule.need)), rule.name
    for rule in needs.recording_rules:
        written = needs_of(promql_parser.parse(needs.written(rule)), frozenset(needs.records))
        assert not list(record_refs(written)), f"{rule.title} still reads a record once written out"


def test_every_rule_of_a_record_is_kept_with_its_static_labels() -> None:
    needs = read_pack(build(PER_MODEL))
    events = needs.records["namespace_model_slo:vllm_slo_events:rate5m"]
    # per SLO one rule, its label telling them apart, the Qwen/.* models and the others joined with `or`
    assert [dict(r.labels) for r in events] == [{"slo": s} for s in SLIS]
    assert all('model_name=~"Qwen/.*"' in r.expr and 'model_name!~"Qwen/.*"' in r.expr for r in events)
    burns = [a for a in needs.alerts if a.name == "VLLMErrorBudgetBurn"]
    assert len({a.labels for a in burns}) == len(burns) == 4, "the window pairs are told apart by labels"


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
    (ratio,) = needs.records["x:foo:ratio"]
    assert ratio.need == AllOf((Record("x:foo:sum", Selector("x:foo:sum")), leaf("bar")))
    written = promql_parser.parse(needs.written(ratio)).prettify()
    assert written == promql_parser.parse('(sum by (x) (foo{job="f"})) / on (x) bar').prettify()


def pack_of(*rules: RecordingRule):
    return read_pack(dataclasses.replace(build(ObspackConfig()), recording_groups=(RuleGroup("g", rules),)))


def test_a_record_read_with_a_time_modifier_cannot_be_written_out_and_says_so() -> None:
    needs = pack_of(RecordingRule("x:a:sum", "sum(a)"), RecordingRule("x:b:sum", "x:a:sum offset 5m"))
    with pytest.raises(CannotInline, match="reads x:a:sum with offset or @"):
        needs.written(needs.records["x:b:sum"][0])


# Readers whose text is where splicing could go wrong: each must be written out exactly as
# promql_parser.transform writes it (the slow way, which the doctor falls back to when the text and the tree
# do not match one for one).
TRICKY = (
    'x:a:sum{job="a\\"b", pod=~"p-\\\\d+"} / on (m) x:b:sum',  # escaped strings beside the records
    'label_replace(x:a:sum, "note", "x:a:sum{m=\\"1\\"}", "", "")',  # a record's name inside a string
    "max_over_time(x:a:sum[10m]) + avg_over_time(x:a:sum [5m:1m])",  # a window, a subquery
    '{__name__="x:a:sum"} * 2',  # the name as a matcher
    'sum by (m) (x:a:sum  {m!=""}) # x:a:sum in a comment\n + x:b:sum',
    "x:a:summary + x:a:sum",  # a longer name that starts with a record's
)


@pytest.mark.parametrize("expr", TRICKY)
def test_a_written_out_record_is_spliced_as_promql_parser_transforms_it(expr: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from obspack.doctor import needs as module

    rules = (RecordingRule("x:a:sum", 'sum by (m) (a{job="j"})'), RecordingRule("x:b:sum", "sum by (m) (b)"))
    needs = pack_of(*rules, RecordingRule("x:a:summary", "a"), RecordingRule("x:read", expr))
    reader = needs.records["x:read"][0]
    spliced = needs.written(reader)
    module._write.cache_clear()
    monkeypatch.setattr(module, "_spliced", lambda expr, found: None)
    assert needs.written(reader) == spliced
    module._write.cache_clear()


# A record of four rules (one SLO each, the last two model branches of one SLO, with the same labels) and
# readers that select it with each kind of matcher. promtool evaluates the real rules and the doctor's
# written-out readers over the same series: both must give exactly the stated series and values.
SLO_A, SLO_B, SLO_C = (("slo", "a"),), (("slo", "b"),), (("slo", "c"),)
SEVERAL = (
    RecordingRule("x:r:sum", "sum by (m) (a)", SLO_A),
    RecordingRule("x:r:sum", "sum by (m) (b)", SLO_B),
    RecordingRule("x:r:sum", 'sum by (m) (c{m=~"q.*"})', SLO_C),
    RecordingRule("x:r:sum", 'sum by (m) (c{m!~"q.*"}) * 10', SLO_C),
)
INPUT = {'a{m="p"}': 1, 'a{m="q1"}': 2, 'b{m="p"}': 3, 'b{m="q2"}': 4, 'c{m="p"}': 5, 'c{m="q3"}': 6}
READERS = {  # reader -> the series it must return: (m, slo, value)
    'x:r:sum{slo="c"}': [("p", "c", 50), ("q3", "c", 6)],
    'x:r:sum{m!="p"}': [("q1", "a", 2), ("q2", "b", 4), ("q3", "c", 6)],
    'x:r:sum{m=~"q1|p", slo!="c"}': [("p", "a", 1), ("q1", "a", 2), ("p", "b", 3)],
    'x:r:sum{slo=~"b|c", m!~"q.*"}': [("p", "b", 3), ("p", "c", 50)],
    'avg_over_time(x:r:sum{slo="b"}[10m])': [("p", "b", 3), ("q2", "b", 4)],
    "x:r:sum": [("p", "a", 1), ("q1", "a", 2), ("p", "b", 3), ("q2", "b", 4), ("p", "c", 50), ("q3", "c", 6)],
}


def test_a_record_of_several_rules_is_written_out_with_only_the_rules_a_reader_selects() -> None:
    needs = pack_of(*SEVERAL, RecordingRule("x:read", 'x:r:sum{slo="b"}'))
    written = promql_parser.parse(needs.written(needs.records["x:read"][0])).prettify()
    # only the rule for slo="b", with its label set; the label decided the matcher, none is left to apply
    assert written == promql_parser.parse('(label_replace(sum by (m) (b), "slo", "b", "", ""))').prettify()


@pytest.mark.tool
def test_written_out_readers_return_what_the_rules_return(tmp_path: Path) -> None:
    readers = tuple(RecordingRule(f"x:reader{i}", expr) for i, expr in enumerate(READERS))
    needs = pack_of(*SEVERAL, *readers)
    cases = []
    for reader, expected in zip(readers, READERS.values()):
        samples = [{"labels": f'{{m="{m}", slo="{slo}"}}', "value": v} for m, slo, v in expected]
        written = needs.written(needs.records[reader.record][0])
        for expr in (reader.record, written):  # `+ 0` drops the record's name
            cases.append({"expr": f"({expr}) + 0", "eval_time": "10m", "exp_samples": samples})
    (tmp_path / "rules.yaml").write_text(
        yaml.safe_dump({"groups": [RuleGroup("g", (*SEVERAL, *readers), "1m").to_dict()]})
    )
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": f"{v}x20"} for s, v in INPUT.items()],
                "promql_expr_test": cases,
            }
        ],
    }
    (tmp_path / "written_test.yaml").write_text(yaml.safe_dump(test))
    done = subprocess.run(
        [require_tool("promtool"), "test", "rules", "written_test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_reader_whose_matchers_no_rule_can_satisfy_is_not_widened() -> None:
    needs = pack_of(*SEVERAL, RecordingRule("x:read", 'x:r:sum{slo="z"}'))
    with pytest.raises(CannotInline, match='no rule of the pack writes x:r:sum{slo="z"}'):
        needs.written(needs.records["x:read"][0])


def test_records_are_read_by_the_labels_dashboards_filter_on_and_the_labels_their_rules_set() -> None:
    needs = read_pack(build(ObspackConfig(cluster_label="k8s_cluster")))
    labels = needs.record_labels()
    on_dashboards = {
        r.name for t in needs.targets for r in record_refs(needs.need(grafana_to_promql(t.expr)))
    }
    assert on_dashboards, "dashboards filter records by their variables"
    # the cost page's clock, time() at each evaluation, has no series to take a cluster from: the step is
    # read as the largest over every cluster's copy (external labels), never filtered
    clock = {c.COST_EVALUATION}
    assert all("k8s_cluster" in labels[name] for name in on_dashboards - clock)
    assert labels[c.COST_EVALUATION] == ()
    assert not any("cluster" in found for found in labels.values())
    assert "slo" in labels["namespace_model_slo:vllm_slo_requests:rate5m"], "its rules set slo"
