"""Does the pack fit the data? Verdicts on records, alerts, dashboard variables and panels.

Each need tree is judged from the selector checks: `or` is met by any side, everything else by all sides.
A record is judged through its rule: when its inputs are there, the rule's expression (with the records it
reads written out) is evaluated, so joins that match nothing across sources show up too. Alerts can fire
when their inputs can be there; panels are judged for the variable values Grafana picks on first load,
and on per-pod pages for one pod of each kind (vLLM generation, DCGM label mode) found in the fleet.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from obspack.doctor import knowledge as k
from obspack.doctor.api import PrometheusAPI, QueryFailed
from obspack.doctor.checks import Check, SelectorChecks, State
from obspack.doctor.findings import Finding, Topic, note, problem, unchecked
from obspack.doctor.needs import (
    MAX_WRITTEN,
    TOO_LONG,
    AllOf,
    CannotInline,
    Labels,
    Leaf,
    Need,
    PackNeeds,
    Record,
    Rule,
    Selector,
    leaves,
    matches,
    record_refs,
)
from obspack.pack.walk import Target, Variable
from obspack.promql import grafana_to_promql, may_match

MAX_REASONS = 4  # a verdict names this many root causes at most
DASHBOARD_RANGE_S = 3600  # the time range a dashboard's variables list their values over (Grafana's default)


def _rank(check: Check) -> int:
    """Which failure of one metric says most: gone beats a wrong matcher beats never present."""
    if check.last_seen is not None:
        return 0
    if check.matcher is not None or check.label is not None:
        return 1
    return {State.MISSING: 2, State.EVENT: 3, State.UNKNOWN: 4}.get(check.state, 5)


@dataclass(frozen=True)
class Verdict:
    state: State
    causes: tuple[Check, ...] = ()  # the selector checks that fail it
    reasons: tuple[str, ...] = ()  # other reasons: a rule that returns nothing, a record without the values

    @property
    def why(self) -> str:
        """The root causes in words: per metric its most telling failure, then the other reasons."""
        best: dict[str, Check] = {}
        for check in self.causes:
            metric = check.leaf.selector.metric
            if metric not in best or _rank(check) < _rank(best[metric]):
                best[metric] = check
        items = [c.describe() for c in best.values()] + list(dict.fromkeys(self.reasons))
        more = f"; and {len(items) - MAX_REASONS} more" if len(items) > MAX_REASONS else ""
        return "; ".join(items[:MAX_REASONS]) + more


OK = Verdict(State.OK)


def judge(need: Need, leaf: Callable[[Leaf], Verdict], record: Callable[[Record], Verdict]) -> Verdict:
    """The verdict on a need tree, with the causes of whatever fails it."""
    if isinstance(need, Leaf):
        return leaf(need)
    if isinstance(need, Record):
        return record(need)
    verdicts = [judge(part, leaf, record) for part in need.parts]
    return both(verdicts) if isinstance(need, AllOf) else either(verdicts)


def _first_failing(verdicts: Sequence[Verdict], order: tuple[State, ...]) -> Verdict:
    for state in order:
        bad = [v for v in verdicts if v.state is state]
        if bad:
            causes = tuple(dict.fromkeys(c for v in bad for c in v.causes))
            return Verdict(state, causes, tuple(dict.fromkeys(r for v in bad for r in v.reasons)))
    return OK


def both(verdicts: Sequence[Verdict]) -> Verdict:
    """All are needed: the worst failure decides."""
    return _first_failing(verdicts, (State.MISSING, State.UNKNOWN, State.EVENT))


def either(verdicts: Sequence[Verdict]) -> Verdict:
    """One is enough: OK when one is, else the mildest failure."""
    if any(v.state is State.OK for v in verdicts):
        return OK
    return _first_failing(verdicts, (State.EVENT, State.UNKNOWN, State.MISSING))


def of_check(check: Check) -> Verdict:
    return OK if check.state is State.OK else Verdict(check.state, (check,))


# ---------------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class RecordData:
    """What one rule of a record returns: its verdict, and its rows (`group by` the labels its readers
    filter on and the static labels it sets); rows None: judged from its inputs only, not evaluated."""

    verdict: Verdict
    rows: tuple[Mapping[str, str], ...] | None = None
    labels: Labels = ()  # the rule's static labels


Records = Mapping[str, tuple[RecordData, ...]]  # record name -> one RecordData per rule that writes it


def _dependency_order(needs: PackNeeds) -> list[str]:
    done: list[str] = []

    def visit(name: str) -> None:
        if name in done:
            return
        for ref in (ref for rule in needs.records[name] for ref in record_refs(rule.need)):
            visit(ref.name)
        done.append(name)

    for name in sorted(needs.records):
        visit(name)
    return done


def evaluate_records(
    api: PrometheusAPI,
    needs: PackNeeds,
    checks: Mapping[Leaf, Check],
    at: float,
    trusted: frozenset[str] = frozenset(),
) -> dict[str, tuple[RecordData, ...]]:
    """Each rule of each record as it returns at `at`. A `trusted` record (its deployed rules are this
    render's, healthy, and it has data) is read from the server as it is, and so are trusted records
    other rules read; the others are evaluated with their rule's expression, written out."""
    order = _dependency_order(needs)
    inputs: dict[str, tuple[RecordData, ...]] = {}
    for name in order:
        inputs[name] = tuple(
            RecordData(verdict_of(rule.need, checks, inputs), labels=rule.labels)
            for rule in needs.records[name]
        )
    labels = needs.record_labels()
    jobs = [
        rule
        for name in order
        for rule, data in zip(needs.records[name], inputs[name])
        if data.verdict.state is State.OK
    ]

    def query(rule: Rule) -> str | CannotInline:
        """The query that evaluates `rule` (records of several windows can share one), or why none can."""
        static = Selector(rule.name, tuple((label, "=", value) for label, value in rule.labels))
        try:
            expr = str(static) if rule.name in trusted else needs.written(rule, keep=trusted)
        except CannotInline as e:
            return e
        return f"group by ({', '.join(labels[rule.name])}) ({expr})"

    texts = [query(rule) for rule in jobs]
    # too long to ask (the cost records, written out): judged by their inputs, as a record that is not asked
    kept = [(rule, text) for rule, text in zip(jobs, texts) if not (isinstance(text, str) and len(text) > MAX_WRITTEN)]
    jobs, texts = [rule for rule, _ in kept], [text for _, text in kept]
    distinct = [t for t in dict.fromkeys(texts) if isinstance(t, str)]
    answers = dict(zip(distinct, api.map(lambda text: api.query(text, at), distinct)))
    results = {
        rule: answers[text] if isinstance(text, str) else f"cannot be evaluated here: {text}"
        for rule, text in zip(jobs, texts)
        # refused as too long by this server: judged by its inputs, as a record too long to ask
        if not (isinstance(text, str) and isinstance(answers[text], QueryFailed) and TOO_LONG.search(str(answers[text])))
    }
    data: dict[str, tuple[RecordData, ...]] = {}
    for name in order:
        data[name] = tuple(
            _returned(rule, results[rule], data)
            if rule in results
            # not asked (too long, or its inputs fail): judged by its inputs as they returned
            else RecordData(verdict_of(rule.need, checks, data), labels=rule.labels)
            for rule in needs.records[name]
        )
    return data


JOINS_MATCH_NOTHING = "its joins match nothing: the labels differ between sources"


def _returned(rule: Rule, result: list[dict[str, object]] | QueryFailed | str, data: Records) -> RecordData:
    """A rule's data from what its evaluation returned; when nothing, why: the records it reads, or its joins."""
    if isinstance(result, QueryFailed | str):
        return RecordData(
            Verdict(State.UNKNOWN, reasons=(f"{rule.title}: could not evaluate its rule: {result}",)),
            labels=rule.labels,
        )
    if result:
        return RecordData(OK, tuple(dict(r["metric"]) for r in result), rule.labels)  # type: ignore[arg-type]
    broken = [of_record(ref, data[ref.name]) for ref in record_refs(rule.need)]
    broken = [v for v in broken if v.state is State.MISSING]
    own = f"{rule.title}: its inputs are there but its rule returns no series ({JOINS_MATCH_NOTHING})"
    causes = tuple(c for v in broken for c in v.causes)
    reasons = tuple(r for v in broken for r in v.reasons) or ((own,) if not causes else ())
    return RecordData(Verdict(State.MISSING, causes, reasons), (), rule.labels)


def of_record(ref: Record, rules: Sequence[RecordData]) -> Verdict:
    """A record as a reader selects it: any rule whose static labels can satisfy the reader's matchers will
    do, with the reader's matchers applied to the rows it returns."""
    mine = [data for data in rules if may_match(ref.selector.matchers, dict(data.labels))]
    if not mine:
        return Verdict(
            State.MISSING, reasons=(f"{ref.selector.text(40)}: no rule of the pack writes these labels",)
        )
    return either([_of_rows(ref, data) for data in mine])


def _of_rows(ref: Record, data: RecordData) -> Verdict:
    if data.verdict.state is not State.OK or data.rows is None or not ref.selector.matchers:
        return data.verdict
    if any(ref.selector.accepts(row) for row in data.rows):
        return OK
    for matcher in ref.selector.matchers:
        label, op, value = matcher
        if not any(matches(matcher, row.get(label, "")) for row in data.rows):
            waits = [when for v, when in k.RECORD_STATES.get(label, {}).items() if matches(matcher, v)]
            if waits and data.rows:
                return Verdict(State.EVENT, reasons=(f"{ref.name}: appears only when {' or '.join(waits)}",))
            seen = sorted({row.get(label, "") for row in data.rows} - {""})
            shown = f" (it has {', '.join(seen[:5])}{'...' if len(seen) > 5 else ''})" if seen else ""
            return Verdict(
                State.MISSING, reasons=(f'{ref.name}: no series with {label}{op}"{value}"{shown}',)
            )
    return Verdict(State.MISSING, reasons=(f"{ref.selector.text(40)}: no series for these values together",))


def rows_of(ref: Record, records: Records) -> list[Mapping[str, str]]:
    """The rows of a record that a reader's matchers select, from every rule that writes it."""
    return [row for data in records[ref.name] for row in data.rows or () if ref.selector.accepts(row)]


# ---------------------------------------------------------------------------------------------------
# Alerts


@dataclass(frozen=True)
class AlertFit:
    name: str
    group: str
    verdict: Verdict
    labels: Labels = ()  # its static labels (severity included): what tells the rules of one name apart

    @property
    def can_fire(self) -> bool:
        return self.verdict.state in (State.OK, State.EVENT)


def verdict_of(need: Need, checks: Mapping[Leaf, Check], records: Records) -> Verdict:
    """A reader's verdict: its selectors as checked, the records it reads as their rules return them."""
    return judge(need, lambda leaf: of_check(checks[leaf]), lambda ref: of_record(ref, records[ref.name]))


def fit_alerts(needs: PackNeeds, checks: Mapping[Leaf, Check], records: Records) -> list[AlertFit]:
    return [AlertFit(a.name, a.group, verdict_of(a.need, checks, records), a.labels) for a in needs.alerts]


def alert_findings(alerts: Iterable[AlertFit]) -> list[Finding]:
    """One finding per alert name and verdict: the rules of one name (window pairs) read the same records."""
    out: dict[Finding, None] = {}
    for a in alerts:
        if a.verdict.state is State.MISSING:
            out[problem(Topic.ALERT, a.name, f"cannot fire: {a.verdict.why}", causes=a.verdict.causes)] = None
        elif a.verdict.state is State.UNKNOWN:
            out[unchecked(Topic.ALERT, a.name, f"could not be checked: {a.verdict.why}")] = None
    return list(out)


# ---------------------------------------------------------------------------------------------------
# Dashboards: samples of variable values, then panels


@dataclass(frozen=True)
class Sample:
    name: str  # "defaults", or the pod it shows
    values: dict[str, str]  # variable -> the text Grafana puts in place of $variable
    empty: tuple[str, ...] = ()  # variables that listed no values
    unasked: tuple[tuple[str, str], ...] = ()  # (variable, why) whose values could not be listed


@dataclass(frozen=True)
class PodKind:
    """One vLLM pod standing for a kind (vLLM generation, DCGM label mode) on per-pod pages."""

    kind: str
    labels: Mapping[str, str]  # cluster label, namespace, pod, model_name


def escape(value: str) -> str:
    """A label value as an exact regex inside a PromQL string, the way Grafana interpolates it."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\\\1", value)


def listed(regex: str, results: Iterable[Mapping[str, object]]) -> list[str]:
    """What Grafana lists for a query_result() variable: each series of the instant query written as
    `name{labels} value timestamp`, through the variable's regex (`/.../`, its first group), without
    repeats. Without a regex, the whole text."""
    pattern = re.fullmatch(r"/(.*)/[a-z]*", regex)
    out: list[str] = []
    for series in results:
        labels = dict(series.get("metric") or {})  # type: ignore[call-overload]
        stamp, value = series.get("value") or (0, "")  # type: ignore[misc]
        name = labels.pop("__name__", "")
        inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
        text = f"{name}{{{inner}}} {value} {int(float(stamp) * 1000)}"
        if pattern is None:
            item = text
        else:
            found = re.search(pattern.group(1), text)
            if found is None:
                continue
            item = found.group(1) if found.groups() else found.group(0)
        if item not in out:
            out.append(item)
    return out


def _values(
    variable: Variable,
    chosen: Mapping[str, str],
    needs: PackNeeds,
    records: Records,
    api: PrometheusAPI,
    at: float,
) -> list[str]:
    selector = grafana_to_promql(variable.selector, chosen)
    if variable.function == "query_result":
        return listed(variable.regex, api.query(selector, at))
    need = needs.need(selector)
    if isinstance(need, Record):
        return sorted({row.get(variable.label, "") for row in rows_of(need, records)} - {""})
    if not variable.label:
        return []
    return api.label_values(variable.label, selector, at - DASHBOARD_RANGE_S, at)


def sample(
    variables: Sequence[Variable],
    needs: PackNeeds,
    records: Records,
    api: PrometheusAPI,
    at: float,
    pod: PodKind | None = None,
) -> Sample:
    """The values Grafana picks on first load (All where allowed, else the first value), or the values
    that show `pod` for the single-value variables of a per-pod page."""
    chosen: dict[str, str] = {}
    empty = []
    unasked = []
    for variable in variables:
        try:
            values = _values(variable, chosen, needs, records, api, at)
        except QueryFailed as e:
            values = []
            unasked.append((variable.name, str(e)))
        if pod is not None and not variable.multi and variable.label in pod.labels:
            chosen[variable.name] = escape(pod.labels[variable.label])
        elif variable.all_value is not None:
            chosen[variable.name] = variable.all_value
        elif values:
            chosen[variable.name] = escape(values[0])
        else:
            chosen[variable.name] = ""
            if not any(name == variable.name for name, _ in unasked):
                empty.append(variable.name)
    name = (
        "defaults"
        if pod is None
        else f"pod {pod.labels.get('namespace')}/{pod.labels.get('pod')} ({pod.kind})"
    )
    return Sample(name, chosen, tuple(empty), tuple(unasked))


@dataclass(frozen=True)
class PanelFit:
    target: Target
    verdicts: tuple[tuple[str, Verdict], ...]  # (sample name, verdict)


@dataclass(frozen=True)
class DashboardFit:
    name: str
    samples: tuple[Sample, ...]
    panels: tuple[PanelFit, ...] = field(default=())
    selectors: tuple[Leaf, ...] = ()  # the raw selectors its queries read with the default values


@dataclass(frozen=True)
class _Plan:
    """A dashboard's samples, and what each of its queries needs for each sample."""

    dashboard: str
    samples: list[Sample]
    reads: list[tuple[Target, list[tuple[Sample, Need]]]]

    def leaves(self) -> Iterable[tuple[Leaf, bool]]:
        """(selector, read with the default values)"""
        for _, per_sample in self.reads:
            for s, need in per_sample:
                for leaf in leaves(need):
                    yield leaf, s.name == "defaults"


def _plan(
    dashboard: str,
    needs: PackNeeds,
    records: Records,
    pods: Sequence[PodKind],
    api: PrometheusAPI,
    at: float,
) -> _Plan:
    variables = [v for v in needs.variables if v.dashboard == dashboard]
    samples = [sample(variables, needs, records, api, at)]
    if any(v.label == "pod" and not v.multi for v in variables):  # a per-pod page
        samples += [sample(variables, needs, records, api, at, pod) for pod in pods]
    reads = [
        (t, [(s, needs.need(grafana_to_promql(t.expr, s.values))) for s in samples])
        for t in needs.targets
        if t.dashboard == dashboard
    ]
    return _Plan(dashboard, samples, reads)


def fit_dashboards(
    api: PrometheusAPI,
    checker: SelectorChecks,
    needs: PackNeeds,
    checks: dict[Leaf, Check],
    records: Records,
    pods: Sequence[PodKind],
    at: float,
) -> list[DashboardFit]:
    """Sample each dashboard's variables, check the selectors its panels then read (adding them to
    `checks`), and judge each panel query for each sample."""
    plans = [
        _plan(d, needs, records, pods, api, at) for d in dict.fromkeys(t.dashboard for t in needs.targets)
    ]
    with_defaults: dict[Leaf, bool] = {}  # read with the default values: a missing one is diagnosed
    for plan in plans:
        for leaf, default in plan.leaves():
            with_defaults[leaf] = with_defaults.get(leaf, False) or default
    new = [leaf for leaf in with_defaults if leaf not in checks]
    checks.update(checker.run([leaf for leaf in new if with_defaults[leaf]]))
    checks.update(checker.run([leaf for leaf in new if not with_defaults[leaf]], diagnose=False))
    return [
        DashboardFit(
            plan.dashboard,
            tuple(plan.samples),
            tuple(
                PanelFit(t, tuple((s.name, verdict_of(n, checks, records)) for s, n in per))
                for t, per in plan.reads
            ),
            tuple(dict.fromkeys(leaf for leaf, default in plan.leaves() if default)),
        )
        for plan in plans
    ]


def dashboard_findings(dashboards: Iterable[DashboardFit]) -> list[Finding]:
    """Per dashboard: variables that list nothing, panels that would be empty (all their queries are), and
    queries that are empty while the rest of their panel shows data."""
    out: list[Finding] = []
    for d in dashboards:
        # A row repeated over a variable with no value is a feature nobody uses: Grafana shows it closed,
        # titled "(engines using it: None)", and its panels are not there to be empty.
        repeats = {fit.target.row for fit in d.panels if fit.target.row}
        empty = {name: s.name for s in reversed(d.samples) for name in s.empty if name not in repeats}
        for name in (n for s in d.samples for n in s.empty):
            if name not in empty:
                continue
            sample = empty.pop(name)
            where = f"{d.name} / ${name}" + ("" if sample == "defaults" else f" for {sample}")
            message = "lists no values: Grafana puts an empty value in its place, which matches only series without the label"
            out.append(note(Topic.VARIABLE, where, message))
        unasked = {s.name: s.unasked for s in d.samples if s.unasked}
        for sample, variables in unasked.items():
            for name, why in variables:
                where = f"{d.name} / ${name}" + ("" if sample == "defaults" else f" for {sample}")
                out.append(unchecked(Topic.VARIABLE, where, f"its values could not be listed: {why}"))
        panels: dict[int | str, list[PanelFit]] = {}
        for fit in d.panels:
            panels.setdefault(fit.target.panel_id or fit.target.panel, []).append(fit)
        for queries in panels.values():
            hidden = {s.name for s in d.samples if queries[0].target.row in s.empty}
            if "defaults" in hidden:
                continue
            shown = [dataclasses.replace(q, verdicts=tuple(v for v in q.verdicts if v[0] not in hidden)) for q in queries]
            out.extend(_panel_findings(shown, set(unasked)))
    return out


def _waits_for_absent_source(verdict: Verdict) -> bool:
    """Empty only because an optional source (the EPP) is deployed nowhere here: the sources report says so."""
    return bool(verdict.causes) and not verdict.reasons and all(c.optional for c in verdict.causes)


def _merge(verdicts: Sequence[Verdict], state: State) -> Verdict:
    return _first_failing(verdicts, (state,))


def _panel_findings(queries: Sequence[PanelFit], guessed: Collection[str] = ()) -> list[Finding]:
    """`guessed`: samples with variables whose values could not be listed (an empty panel there may
    only be the empty value put in their place)."""
    panel = queries[0].target.panel_where
    for sample in (name for name, _ in queries[0].verdicts):
        verdicts = [dict(q.verdicts)[sample] for q in queries]
        if any(v.state is State.OK for v in verdicts):
            continue
        states = {v.state for v in verdicts}
        for_sample = "" if sample == "defaults" else f" for {sample}"
        if sample in guessed and states != {State.EVENT}:
            why = "the values of its dashboard's variables could not be listed"
            return [unchecked(Topic.PANEL, panel, f"could not be checked{for_sample}: {why}")]
        if State.MISSING in states:
            merged = _merge(verdicts, State.MISSING)
            return [
                problem(Topic.PANEL, panel, f"would be empty{for_sample}: {merged.why}", causes=merged.causes)
            ]
        if states == {State.EVENT}:
            if all(_waits_for_absent_source(v) for v in verdicts):
                return []  # a page of an optional source that is not deployed (no EPP): no finding
            return [
                note(Topic.PANEL, panel, f"empty on a healthy fleet: {_merge(verdicts, State.EVENT).why}")
            ]
        return [
            unchecked(
                Topic.PANEL, panel, f"could not be checked{for_sample}: {_merge(verdicts, State.UNKNOWN).why}"
            )
        ]
    out = []
    for query in queries:  # the panel shows data; say which of its queries do not, with the defaults
        v = dict(query.verdicts)["defaults"]
        if v.state is State.MISSING:
            out.append(
                note(
                    Topic.PANEL,
                    query.target.where,
                    f"is empty while the panel shows its other queries: {v.why}",
                )
            )
        elif v.state is State.EVENT and not _waits_for_absent_source(v):
            out.append(note(Topic.PANEL, query.target.where, f"empty on a healthy fleet: {v.why}"))
        elif v.state is State.UNKNOWN:
            out.append(unchecked(Topic.PANEL, query.target.where, f"could not be checked: {v.why}"))
    return out
