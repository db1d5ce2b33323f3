"""Are the pack's rule groups loaded where this server can see them, healthy, fast enough, and the same
as this render? Read from /api/v1/rules; where a backend has no rules API, the records' own series tell
whether the recording rules run somewhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import promql_parser as pp

from obspack import durations
from obspack.doctor.api import PrometheusAPI, QueryFailed
from obspack.doctor.backends import Backend
from obspack.doctor.findings import Finding, Topic, note, problem, unchecked
from obspack.doctor.needs import Selector
from obspack.rules.model import AlertRule, RuleGroup

SLOW = 0.5  # a group that needs more than this share of its interval gets a note
SHOWN = 3  # differences named per group


@dataclass(frozen=True)
class GroupStatus:
    name: str
    files: tuple[str, ...] = ()  # where it is loaded from (empty: not loaded)
    evaluation_s: float | None = None
    interval_s: float | None = None
    errors: tuple[tuple[str, str], ...] = ()  # (rule, last error)
    differences: tuple[str, ...] = ()
    records_written: bool | None = None  # for groups not loaded here: do their records have data?

    @property
    def loaded(self) -> bool:
        return bool(self.files)


def _normal(expr: str) -> str:
    try:
        return pp.parse(expr).prettify()
    except Exception:  # noqa: BLE001 - the parser raises plain errors; then compare the text
        return " ".join(expr.split())


def _rendered(rule: object) -> dict[str, Any]:
    data = rule.to_dict()  # type: ignore[attr-defined]
    name = data.get("alert") or data.get("record")
    out = {"name": name, "query": _normal(str(data["expr"])), "labels": dict(data.get("labels", {}))}
    if isinstance(rule, AlertRule):
        out["for"] = durations.parse_ms(str(data["for"])) / 1000 if "for" in data else 0.0
        out["annotations"] = dict(data.get("annotations", {}))
    return out


def _loaded(rule: Mapping[str, Any], alerting: bool) -> dict[str, Any]:
    out = {
        "name": rule.get("name"),
        "query": _normal(str(rule.get("query", ""))),
        "labels": dict(rule.get("labels") or {}),
    }
    if alerting:
        out["for"] = float(rule.get("duration") or 0)
        out["annotations"] = dict(rule.get("annotations") or {})
    return out


def _key(rule: Mapping[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A rule's identity: its name and static labels (one alert name has a rule per window pair; one
    record a rule per SLO and model branch)."""
    return rule["name"], tuple(sorted(rule["labels"].items()))


def _paired(
    ours: list[dict[str, Any]], theirs: list[dict[str, Any]], key: Callable[[Mapping[str, Any]], object]
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Rules of both sides with the same key, paired in order; and the rest of each side."""
    waiting: dict[object, list[dict[str, Any]]] = {}
    for rule in theirs:
        waiting.setdefault(key(rule), []).append(rule)
    pairs, alone = [], []
    for rule in ours:
        match = waiting.get(key(rule))
        if match:
            pairs.append((rule, match.pop(0)))
        else:
            alone.append(rule)
    left = {id(rule) for rules in waiting.values() for rule in rules}
    return pairs, alone, [rule for rule in theirs if id(rule) in left]


def compare(group: RuleGroup, loaded: Mapping[str, Any]) -> tuple[str, ...]:
    """How a loaded group differs from the rendered one, in words (empty: the same). Rules are matched by
    name and static labels, then what is left by name alone (a rule whose labels were changed)."""
    ours = [_rendered(r) for r in group.rules]
    theirs = [_loaded(r, r.get("type") == "alerting" or "duration" in r) for r in loaded.get("rules", [])]
    same, ours_left, theirs_left = _paired(ours, theirs, _key)
    renamed, not_loaded, not_rendered = _paired(ours_left, theirs_left, lambda r: r["name"])
    several = {
        n for side in (ours, theirs) for n, count in Counter(r["name"] for r in side).items() if count > 1
    }

    def title(rule: Mapping[str, Any]) -> str:
        if rule["name"] not in several:
            return str(rule["name"])
        return str(Selector(rule["name"], tuple((k, "=", v) for k, v in _key(rule)[1])))

    out = [f"{title(r)} is not loaded" for r in not_loaded]
    out += [f"{title(r)} is loaded but not rendered" for r in not_rendered]
    for rule, other in same + renamed:
        changed = [key for key in rule if rule[key] != other.get(key)]
        if changed:
            out.append(f"{title(rule)} differs in {', '.join(changed)}")
    if not out and [_key(r) for r in ours] != [_key(r) for r in theirs]:
        out.append("its rules are in another order")
    return tuple(out)


@dataclass(frozen=True)
class Deployment:
    groups: tuple[GroupStatus, ...]
    findings: tuple[Finding, ...]
    trusted: frozenset[str]  # records of loaded groups that are the same as this render, healthy, with data


def check_groups(api: PrometheusAPI, backend: Backend, groups: Sequence[RuleGroup], at: float) -> Deployment:
    try:
        written = _records_written(api, groups, at)
        unasked: tuple[Finding, ...] = ()
    except QueryFailed as e:
        written = {}
        unasked = (
            unchecked(
                Topic.RULES, "recording rules", f"whether their records have data could not be asked: {e}"
            ),
        )
    if not backend.rules.available:
        statuses, findings = _without_rules_api(backend, groups, written)
        return Deployment(tuple(statuses), (*findings, *unasked), frozenset())
    loaded: dict[str, list[Mapping[str, Any]]] = {}
    for g in backend.rule_groups:
        loaded.setdefault(str(g.get("name")), []).append(g)
    statuses = [_status(group, loaded.get(group.name, []), written) for group in groups]
    fine = {
        group.name for group, s in zip(groups, statuses) if s.loaded and not s.errors and not s.differences
    }
    writers: dict[str, set[str]] = {}  # record -> the groups with a rule that writes it
    for group in groups:
        for r in group.rules:
            if not isinstance(r, AlertRule):
                writers.setdefault(r.record, set()).add(group.name)
    trusted = frozenset(name for name, by in writers.items() if by <= fine and written.get(name))
    if all(s.loaded for s in statuses):
        unasked = ()  # their records' data only decides which records are read as they are
    if not any(s.loaded or s.records_written for s in statuses):
        message = f"none of the pack's {len(groups)} rule groups is loaded"
        return Deployment(tuple(statuses), (_not_loaded(message, "rule groups"), *unasked), trusted)
    findings = tuple(f for group, status in zip(groups, statuses) for f in _group_findings(group, status))
    return Deployment(tuple(statuses), (*findings, *unasked), trusted)


def _not_loaded(message: str, subject: str) -> Finding:
    return problem(
        Topic.RULES,
        subject,
        message,
        action="rules: load generated/prometheus/*.yaml, or apply generated/kubernetes/prometheusrule.yaml with "
        "labels your Prometheus Operator's ruleSelector matches (prometheus_rule.labels)",
    )


def _status(
    group: RuleGroup, copies: Sequence[Mapping[str, Any]], written: Mapping[str, bool]
) -> GroupStatus:
    records = [r.record for r in group.rules if not isinstance(r, AlertRule)]
    if not copies:
        has_data = any(written.get(r) for r in records) if records else None
        return GroupStatus(group.name, records_written=has_data)
    first = copies[0]
    errors = tuple(
        (str(r.get("name")), str(r.get("lastError") or "unknown error"))
        for c in copies
        for r in c.get("rules", [])
        if r.get("health") == "err"
    )
    interval = first.get("interval")
    return GroupStatus(
        name=group.name,
        files=tuple(str(c.get("file", "")) for c in copies),
        evaluation_s=float(first["evaluationTime"]) if first.get("evaluationTime") is not None else None,
        interval_s=float(interval) if interval else None,
        errors=errors,
        differences=compare(group, first),
    )


def _group_findings(group: RuleGroup, status: GroupStatus) -> list[Finding]:
    if not status.loaded:
        if status.records_written:
            return [
                note(
                    Topic.RULES,
                    group.name,
                    "not loaded here, but its records have data (evaluated elsewhere)",
                )
            ]
        what = (
            "its alerts cannot fire"
            if status.records_written is None
            else "panels and alerts read its records"
        )
        return [_not_loaded(f"not loaded: {what}", group.name)]
    out = []
    for rule, error in status.errors:
        out.append(problem(Topic.RULES, f"{group.name} / {rule}", f"fails to evaluate: {error}"))
    if len(status.files) > 1:
        out.append(
            note(Topic.RULES, group.name, f"loaded {len(status.files)} times ({', '.join(status.files)})")
        )
    if status.evaluation_s is not None and status.interval_s:
        share = status.evaluation_s / status.interval_s
        timing = f"evaluation takes {status.evaluation_s:.2f}s of its {durations.format_s(status.interval_s, coarse=True)} interval"
        if share >= 1:
            out.append(problem(Topic.RULES, group.name, f"{timing}: evaluations are skipped"))
        elif share >= SLOW:
            out.append(note(Topic.RULES, group.name, timing))
    if status.differences:
        shown = "; ".join(status.differences[:SHOWN])
        more = f"; and {len(status.differences) - SHOWN} more" if len(status.differences) > SHOWN else ""
        message = f"differs from this render (another obspack version or config): {shown}{more}"
        out.append(note(Topic.RULES, group.name, message))
    return out


def _records_written(api: PrometheusAPI, groups: Iterable[RuleGroup], at: float) -> dict[str, bool]:
    names = sorted({r.record for g in groups for r in g.rules if not isinstance(r, AlertRule)})
    if not names:
        return {}
    rows = api.query(f'count by (__name__) ({{__name__=~"{"|".join(names)}"}})', at)
    present = {r["metric"].get("__name__") for r in rows}
    return {name: name in present for name in names}


def _without_rules_api(
    backend: Backend, groups: Sequence[RuleGroup], written: Mapping[str, bool]
) -> tuple[list[GroupStatus], list[Finding]]:
    statuses = [_status(g, [], written) for g in groups]
    says = unchecked if backend.rules.unasked else note
    findings = [
        says(Topic.BACKEND, backend.title, f"deployed rules cannot be checked: {backend.rules.detail}")
    ]
    if written and not any(written.values()):
        findings.append(
            problem(
                Topic.RULES,
                "recording rules",
                "no record of the pack has data: the recording rules run nowhere this server can see",
                action="rules: load generated/prometheus/recording-rules.yaml into the ruler that writes to this "
                "server (Prometheus, vmalert, Thanos or Mimir ruler)",
            )
        )
    return statuses, findings
