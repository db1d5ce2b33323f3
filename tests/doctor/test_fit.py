"""Verdicts from selector checks: how `or`, `and` and records combine them, which reasons are shown, and how
a panel's queries make the panel empty or not."""

from __future__ import annotations

import dataclasses

from obspack.config import ObspackConfig
from obspack.doctor.api import QueryFailed
from obspack.doctor.checks import Check, State
from obspack.doctor.findings import Level
from obspack.doctor.fit import (
    MAX_REASONS,
    OK,
    DashboardFit,
    PanelFit,
    RecordData,
    Sample,
    Verdict,
    _panel_findings,
    dashboard_findings,
    escape,
    evaluate_records,
    judge,
    listed,
    of_check,
    of_record,
)
from obspack.doctor.needs import AllOf, AnyOf, Leaf, Record, Selector, leaves, matches, read_pack
from obspack.pack import build
from obspack.pack.walk import Target


def leaf(metric: str, **labels: str) -> Leaf:
    return Leaf(Selector(metric, tuple((k, "=", v) for k, v in sorted(labels.items()))))


def checks(**states: State) -> dict[Leaf, Check]:
    reasons = {State.MISSING: "never present in the last 1d", State.EVENT: "appears only when it happens"}
    return {leaf(m): Check(leaf(m), s, reasons.get(s, "")) for m, s in states.items()}


def verdict(need, found: dict[Leaf, Check]) -> Verdict:
    return judge(need, lambda x: of_check(found[x]), lambda r: OK)


def test_or_needs_one_side_and_and_needs_both() -> None:
    found = checks(a=State.OK, b=State.MISSING, c=State.EVENT)
    assert verdict(AnyOf((leaf("a"), leaf("b"))), found) == OK
    both = verdict(AllOf((leaf("a"), leaf("b"))), found)
    assert both.state is State.MISSING and both.causes == (found[leaf("b")],)
    assert verdict(AllOf((leaf("a"), leaf("c"))), found).state is State.EVENT
    assert verdict(AnyOf((leaf("b"), leaf("c"))), found).state is State.EVENT
    neither = verdict(AnyOf((leaf("b"), leaf("b2"))), {**found, **checks(b2=State.MISSING)})
    assert neither.state is State.MISSING and len(neither.causes) == 2


def test_the_reasons_name_each_metric_once_with_its_most_telling_failure() -> None:
    gone = Check(leaf("a", mode="x"), State.MISSING, "gone: last seen 5m ago", last_seen=1.0)
    never = Check(leaf("a", mode="y"), State.MISSING, "never present in the last 1d")
    others = [Check(leaf(f"m{i}"), State.MISSING, "never present in the last 1d") for i in range(MAX_REASONS)]
    why = Verdict(State.MISSING, (never, gone, *others)).why
    assert why.startswith('a{mode="x"}: gone: last seen 5m ago;') and 'mode="y"' not in why
    assert why.endswith("; and 1 more")


def record(metric: str, *matchers: tuple[str, str, str]) -> Record:
    return Record(metric, Selector(metric, matchers))


def test_a_record_is_read_with_the_readers_matchers() -> None:
    rows = ({"cluster": "east", "pod": "p1"}, {"cluster": "west", "pod": "p2"})
    data = (RecordData(OK, rows),)
    assert of_record(record("r", ("pod", "=~", "p1")), data) == OK
    missing = of_record(record("r", ("pod", "=~", "p3")), data)
    assert missing.state is State.MISSING and missing.reasons == (
        'r: no series with pod=~"p3" (it has p1, p2)',
    )
    broken = (RecordData(Verdict(State.MISSING, reasons=("r: its rule returns no series",))),)
    assert of_record(record("r", ("pod", "=~", "p1")), broken) == broken[0].verdict


def test_a_record_of_several_rules_is_read_from_the_rules_whose_labels_the_reader_selects() -> None:
    """One rule per SLO: the availability rule lacks its input, the latency one returns rows."""
    http = Check(leaf("http_requests_total"), State.MISSING, "never present in the last 1d")
    rules = (
        RecordData(OK, ({"slo": "latency", "model": "m"},), (("slo", "latency"),)),
        RecordData(Verdict(State.MISSING, (http,)), None, (("slo", "availability"),)),
    )
    assert of_record(record("r"), rules) == OK, "any rule will do for a reader of the whole record"
    assert of_record(record("r", ("slo", "=", "latency"), ("model", "=", "m")), rules) == OK
    availability = of_record(record("r", ("slo", "=", "availability")), rules)
    assert availability.state is State.MISSING and availability.causes == (http,)
    assert of_record(record("r", ("slo", "=~", "avail.*|late.*")), rules) == OK
    none = of_record(record("r", ("slo", "=", "ttft")), rules)
    assert none.state is State.MISSING and none.reasons == (
        'r{slo="ttft"}: no rule of the pack writes these labels',
    )


def test_values_are_escaped_the_way_grafana_does() -> None:
    for value in ("meta-llama/Llama-3.1-8B-Instruct", "a|b", "x(1)+[2]"):
        regex = escape(value).replace("\\\\", "\\")  # as the PromQL string holds it
        assert matches(("model_name", "=~", regex), value)
        assert not matches(("model_name", "=~", regex), value + "x")


def panel(*states: State) -> list[PanelFit]:
    found = {State.MISSING: "never present", State.EVENT: "appears only when it happens"}
    return [
        PanelFit(
            Target("d", "Panel", ref, "x", panel_id=1),
            (
                (
                    "defaults",
                    Verdict(s, (Check(leaf(ref), s, found.get(s, "")),) if s is not State.OK else ()),
                ),
            ),
        )
        for ref, s in zip("ABC", states)
    ]


def test_a_panel_is_empty_only_when_all_its_queries_are() -> None:
    (empty,) = _panel_findings(panel(State.MISSING, State.MISSING))
    assert (empty.level, empty.subject) == (Level.PROBLEM, "d / Panel") and empty.message.startswith(
        "would be empty"
    )
    (partly,) = _panel_findings(panel(State.OK, State.MISSING))
    assert (partly.level, partly.subject) == (Level.NOTE, "d / Panel [B]")
    (by_design,) = _panel_findings(panel(State.EVENT))
    assert (by_design.level, by_design.subject) == (Level.NOTE, "d / Panel")
    assert _panel_findings(panel(State.OK, State.OK)) == []


def test_a_query_result_variable_lists_what_grafana_would() -> None:
    """Grafana writes each series of the instant query as `name{labels} value timestamp` and takes the
    regex's first group: the fleet page's feature counts."""
    regex = r"/^\{\} (\d+) /"
    assert listed(regex, [{"metric": {}, "value": [1700000000.0, "12"]}]) == ["12"]
    assert listed(regex, []) == []
    series = [{"metric": {"__name__": "up", "job": "a"}, "value": [1.5, "1"]}] * 2
    assert listed("", series) == ['up{job="a"} 1 1500'] and listed("/job=\"(\\w+)\"/", series) == ["a"]


def test_a_panel_of_a_row_whose_feature_nobody_runs_is_no_finding() -> None:
    """A repeated row whose variable lists nothing is drawn closed with its title saying None: its panels
    are not there to be empty, and the variable is no note either. The same panel outside the row is."""
    queries = panel(State.MISSING)
    hidden = [dataclasses.replace(q, target=dataclasses.replace(q.target, row="spec_decode")) for q in queries]
    sample = Sample("defaults", {"spec_decode": ""}, empty=("spec_decode",))
    assert dashboard_findings([DashboardFit("d", (sample,), tuple(hidden))]) == []
    shown = dashboard_findings([DashboardFit("d", (sample,), tuple(queries))])
    assert [(f.level, f.topic.value, f.subject) for f in shown] == [
        (Level.NOTE, "variable", "d / $spec_decode"),
        (Level.PROBLEM, "panel", "d / Panel"),
    ]


def test_a_gpu_state_a_healthy_fleet_is_not_in_waits_like_an_event() -> None:
    """The cost page's idle GPUs read the record with state="idle": where the record has only serving GPUs,
    the panel waits (a note), and where it has none at all, it is broken."""
    serving = (RecordData(OK, ({"pod": "p1", "state": "serving"},)),)
    idle = of_record(record("r", ("state", "=", "idle")), serving)
    assert idle.state is State.EVENT and "holds GPUs and serves nothing" in idle.why
    assert of_record(record("r", ("state", "=~", "idle|asleep")), serving).state is State.EVENT
    assert of_record(record("r", ("pod", "=", "p2")), serving).state is State.MISSING
    assert of_record(record("r", ("state", "=", "idle")), (RecordData(OK, ()),)).state is State.MISSING


class ShortQueries:
    """A server that refuses queries over 16 KiB, as VictoriaMetrics does by default, and answers the rest
    with one series."""

    def __init__(self) -> None:
        self.refused = 0

    def query(self, text: str, at: float) -> list:
        if len(text) > 16384:
            self.refused += 1
            raise QueryFailed("query: 422: too long query; got 17674 bytes; mustn't exceed `-search.maxQueryLen=16384` bytes")
        return [{"metric": {}, "value": [at, "1"]}]

    def map(self, fn, items):  # noqa: ANN001, ANN201
        out = []
        for item in items:
            try:
                out.append(fn(item))
            except QueryFailed as e:
                out.append(e)
        return out


def test_a_record_the_server_refuses_as_too_long_is_judged_by_its_inputs() -> None:
    needs = read_pack(build(ObspackConfig()))
    found = {leaf: Check(leaf, State.OK) for rule in needs.recording_rules for leaf in leaves(rule.need)}
    api = ShortQueries()
    data = evaluate_records(api, needs, found, 0.0)  # type: ignore[arg-type]
    assert api.refused > 0
    labels = needs.record_labels()
    for name, rules in needs.records.items():
        for rule, got in zip(rules, data[name]):
            asked = f"group by ({', '.join(labels[name])}) ({needs.written(rule)})"  # as the doctor asks it
            if len(asked) > 16384:  # refused, or too long to ask: what its inputs say, never "unknown"
                assert got.rows is None and got.verdict.state is not State.UNKNOWN, name
            else:  # asked: what came back
                assert got.rows == ({},) and got.verdict == OK, name
    assert data["namespace_model_role_tokens:vllm_gpu_cost_per_hour:sum"][0].verdict == OK


def test_a_panel_that_waits_only_for_an_optional_source_deployed_nowhere_is_no_finding() -> None:
    """The gateway page without any EPP: its series wait for one to be scraped (the sources report says
    there is none), so its panels are no finding; one that also waits for something else stays a note."""
    absent = Check(leaf("llm_d_epp_info"), State.EVENT, "appears only when an EPP is scraped", optional=True)
    error = Check(leaf("llm_d_epp_request_error_total"), State.EVENT, "appears only when the EPP answers an error")

    def queries(*found: Check) -> list[PanelFit]:
        return [
            PanelFit(Target("d", "Panel", ref, "x", panel_id=1), (("defaults", Verdict(State.EVENT, (c,))),))
            for ref, c in zip("AB", found)
        ]

    assert _panel_findings(queries(absent)) == []
    assert _panel_findings(queries(absent, absent)) == []
    (waits,) = _panel_findings(queries(absent, error))
    assert (waits.level, waits.subject) == (Level.NOTE, "d / Panel")
    shown = [*panel(State.OK), *queries(absent)[:1]]  # a query of a panel that shows data: no note either
    shown[1] = dataclasses.replace(shown[1], target=dataclasses.replace(shown[1].target, ref="B"))
    assert _panel_findings(shown) == []
