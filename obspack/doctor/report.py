"""The doctor's report: what it found, as text for a terminal and as JSON for machines."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from obspack.doctor.advice import Advice
from obspack.doctor.api import printable
from obspack.doctor.backends import Backend
from obspack.doctor.causes import Causes, fix_of
from obspack.doctor.checks import Check, State
from obspack.doctor.deployed import GroupStatus
from obspack.doctor.findings import Finding, Level, Topic, counted
from obspack.doctor.fit import AlertFit, DashboardFit
from obspack.doctor.sources import SourceReport
from obspack.durations import format_s


@dataclass(frozen=True)
class Report:
    url: str
    at: float
    lookback_s: int
    pack: str
    backend: Backend
    sources: tuple[SourceReport, ...]
    targets: str
    selectors: tuple[Check, ...]
    alerts: tuple[AlertFit, ...]
    dashboards: tuple[DashboardFit, ...]
    groups: tuple[GroupStatus, ...]
    findings: tuple[Finding, ...]
    causes: Causes  # the problems grouped by what causes them
    advice: Advice
    elapsed_s: float
    requests: int
    phases: dict[str, float]  # seconds per step of the run
    slowest: tuple[tuple[float, str], ...]  # the slowest requests: (seconds, what was asked)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.level is Level.PROBLEM]

    @property
    def unchecked(self) -> list[Finding]:
        """Checks the server failed to answer: never a pass."""
        return [f for f in self.findings if f.level is Level.UNCHECKED]

    @property
    def notes(self) -> list[Finding]:
        """Notes, less those that state a cause of problems (shown with it)."""
        return [f for f in self.findings if f.level is Level.NOTE and f not in self.causes.stated]

    @property
    def counts(self) -> dict[str, int]:
        """Problems counted by cause; not checked and notes by the lines that show them."""
        return {
            "problems": len(self.causes.causes) + len(_grouped(list(self.causes.alone))),
            "not_checked": len(_grouped(self.unchecked)),
            "notes": len(_grouped(self.notes)),
        }

    @property
    def exit_code(self) -> int:
        return 1 if self.problems or self.unchecked else 0


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _panel_counts(report: Report) -> tuple[int, int, int]:
    """Panels, panels that would be empty, panels empty by design (as the findings say)."""
    panels = {(d.name, p.target.panel_id or p.target.panel) for d in report.dashboards for p in d.panels}
    whole = [f for f in report.findings if f.topic is Topic.PANEL and not f.subject.endswith("]")]
    empty = sum(1 for f in whole if f.level is Level.PROBLEM)
    by_design = sum(
        1 for f in whole if f.level is Level.NOTE and f.message.startswith("empty on a healthy fleet")
    )
    return len(panels), empty, by_design


def _rules_line(report: Report) -> str:
    if not report.backend.rules.available:
        written = [g for g in report.groups if g.records_written]
        return (
            f"not listed by this backend; records of {len(written)} of {len(report.groups)} groups have data"
        )
    loaded = [g for g in report.groups if g.loaded]
    if not loaded:
        return f"none of the pack's {len(report.groups)} groups is loaded"
    failing = sum(1 for g in loaded if g.errors)
    different = sum(1 for g in loaded if g.differences)
    text = f"{len(loaded)} of {len(report.groups)} groups loaded, {failing} failing, "
    if different:
        text += f"{different} differ from this render"
    else:
        text += "the same as this render" if len(loaded) > 1 else "it is the same as this render"
    timed = [g for g in loaded if g.evaluation_s is not None and g.interval_s]
    if timed:
        slowest = max(timed, key=lambda g: g.evaluation_s / g.interval_s)  # type: ignore[operator]
        text += (
            f"; slowest {slowest.name}: {slowest.evaluation_s:.3f}s of {format_s(slowest.interval_s or 0, coarse=True)}"
        )
    return text


def _grouped(findings: list[Finding]) -> list[str]:
    """One line per finding, except panels (or variables) of one dashboard with the same message: one line
    for them all."""
    return [line for line, _ in _grouped_findings(findings)]


def _grouped_findings(findings: list[Finding]) -> list[tuple[str, list[Finding]]]:
    """`_grouped`'s lines, each with the findings it stands for."""
    groups: dict[tuple[str, str, str], tuple[list[str], list[Finding]]] = {}
    for f in findings:
        if f.topic in (Topic.PANEL, Topic.VARIABLE) and " / " in f.subject:
            dashboard, _, panel = f.subject.partition(" / ")
            entry = groups.setdefault((f.topic.value, dashboard, f.message), ([], []))
            entry[0].append(panel)
        else:
            entry = groups.setdefault((f.topic.value, f.subject, f.message), ([], []))
        entry[1].append(f)
    lines = []
    for (topic, subject, message), (panels, found) in groups.items():
        if panels:
            lines.append((f"{topic} {subject} / {' | '.join(panels)}: {message}", found))
        else:
            lines.append((f"{topic} {subject}: {message}", found))
    return lines


def _listed(names: list[str], most: int = 8) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _cause_lines(causes: Causes, label: str) -> list[str]:
    """Each cause first, then what fails because of it and what to do; then the problems that are their own
    cause, each with what to do."""
    lines = []
    for cause in causes.causes:
        lines.append(f"  {label} {printable(cause.title)}")
        alerts, panels = cause.alerts, cause.panels
        if alerts:
            lines.append(f"      so {counted(len(alerts), 'alert')} cannot fire: {_listed(list(alerts))}")
        if panels:
            where = _listed([f"{d} ({n})" for d, n in panels.items()])
            lines.append(f"      so {counted(sum(panels.values()), 'panel')} would be empty: {where}")
        variables = sorted({f.subject for f in cause.explained if f.topic is Topic.VARIABLE})
        if variables:
            verb = "lists" if len(variables) == 1 else "list"
            lines.append(f"      so {counted(len(variables), 'dashboard variable')} {verb} no values: {_listed(variables)}")
        queries = [f for f in cause.explained if f.topic is not Topic.VARIABLE]
        if queries:
            verb = "returns" if len(queries) == 1 else "return"
            lines.append(f"      so {counted(len(queries), 'more query', 'more queries')} {verb} nothing")
        lines.append(f"      fix: {printable(cause.action or FALLBACK_FIX)}")
    for line, fixes in _grouped_fixes(list(causes.alone)):
        lines.append(f"  {label} {printable(line)}")
        lines.append(f"      fix: {printable(fixes or FALLBACK_FIX)}")
    return lines


# A problem the doctor cannot say more about: never a problem without a line on what to do.
FALLBACK_FIX = "see the notes and the Advice below"


def _grouped_fixes(findings: list[Finding]) -> list[tuple[str, str]]:
    """`_grouped`'s lines, each with what its findings say to do (their actions and config changes)."""
    return [
        (line, "; ".join(dict.fromkeys(fix for fix in map(fix_of, found) if fix)))
        for line, found in _grouped_findings(findings)
    ]


def text(report: Report, style: Callable[..., str]) -> str:
    """The report for a terminal; `style` is typer.style (colour is dropped when output is not a TTY).
    What came from the server is shown with its control characters escaped (api.printable)."""
    b = report.backend
    lines = [
        style("obspack doctor", bold=True)
        + f"  {printable(report.url)}  {printable(b.title)}  at {_when(report.at)} "
        f"(lookback {format_s(report.lookback_s, coarse=True)})",
        f"pack: {report.pack}",
        "",
        style("Backend", bold=True),
        "  "
        + "  ".join(
            f"{name} {'yes' if c.available else 'no'}"
            for name, c in (("rules", b.rules), ("targets", b.targets), ("status/tsdb", b.tsdb))
        ),
        f"  scrape targets: {printable(report.targets)}",
    ]
    if b.head_series is not None:
        lines.append(f"  status/tsdb: {b.head_series} series")
    lines += ["", style("Sources", bold=True)]
    width = max((len(s.title) for s in report.sources), default=0)
    lines += [f"  {s.title.ljust(width)}  {printable(s.summary)}" for s in report.sources]
    total, empty, by_design = _panel_counts(report)
    can_fire = sum(1 for a in report.alerts if a.can_fire)
    samples = sum(len(d.samples) for d in report.dashboards)
    missing = sum(1 for c in report.selectors if c.state is State.MISSING)
    lines += [
        "",
        style("Fit", bold=True),
        f"  selectors   {len(report.selectors)} checked, {missing} missing (many are alternatives for other versions)",
        f"  alerts      {can_fire} of {len(report.alerts)} can fire",
        f"  dashboards  {len(report.dashboards)} dashboards, {total} panels, {samples} samples of variable values: "
        f"{empty} would be empty, {by_design} empty by design",
        "",
        style("Deployed rules", bold=True),
        f"  {_rules_line(report)}",
    ]
    counts = report.counts
    if counts["problems"]:
        lines += ["", style(f"Problems ({counts['problems']})", fg="red", bold=True)]
        lines += _cause_lines(report.causes, style("problem", fg="red"))
    for level, colour, items in (
        ("Not checked", "magenta", report.unchecked),
        ("Notes", "yellow", report.notes),
    ):
        if items:
            lines += ["", style(f"{level} ({len(_grouped(items))})", fg=colour, bold=True)]
            lines += [
                f"  {style(items[0].level.value, fg=colour)} {printable(line)}" for line in _grouped(items)
            ]
    shown = {c.finding.action for c in report.causes.causes if c.finding is not None}
    shown |= {f.action for f in report.causes.alone}  # printed as their problem's fix
    actions = [a for a in report.advice.actions if a not in shown]
    if report.advice.fixes or actions:
        lines += ["", style("Advice", bold=True)]
        if report.advice.fixes:
            lines.append("  Paste into obspack.yaml, then run `obspack render`:")
            lines += ["    " + printable(line) for line in report.advice.yaml().splitlines()]
        if actions:
            lines.append("  Outside obspack.yaml:")
            lines += [f"    - {printable(a)}" for a in actions]
    verdict = (
        f"{counted(counts['problems'], 'problem')}, {counts['not_checked']} not checked, "
        f"{counted(counts['notes'], 'note')}"
    )
    colour = "red" if report.exit_code else "green"
    lines += [
        "",
        style(verdict, fg=colour, bold=True) + f" (exit {report.exit_code}); "
        f"{report.requests} requests in {report.elapsed_s:.1f}s",
    ]
    return "\n".join(lines)


def as_json(report: Report) -> dict[str, Any]:
    b = report.backend
    return {
        "url": report.url,
        "time": _when(report.at),
        "lookback": format_s(report.lookback_s, coarse=True),
        "pack": report.pack,
        "exit_code": report.exit_code,
        "counts": report.counts,
        "causes": [
            {
                "cause": c.title,
                "kind": c.key[0],
                "action": c.action,
                "alerts": list(c.alerts),
                "panels": c.panels,
                "problems": [{"topic": f.topic.value, "subject": f.subject} for f in c.consequences],
                "notes": [{"topic": f.topic.value, "subject": f.subject} for f in c.explained],
            }
            for c in report.causes.causes
        ],
        "backend": {
            "kind": b.kind,
            "version": b.version,
            "capabilities": {
                name: {"available": c.available, "detail": c.detail}
                for name, c in (("rules", b.rules), ("targets", b.targets), ("tsdb", b.tsdb))
            },
            "head_series": b.head_series,
            "targets": report.targets,
        },
        "sources": [
            {"title": s.title, "found": s.found, "summary": s.summary, "details": dict(s.details)}
            for s in report.sources
        ],
        "selectors": [
            {"selector": str(c.leaf), "state": c.state.value, "reason": c.reason} for c in report.selectors
        ],
        "alerts": [
            {
                "alert": a.name,
                "labels": dict(a.labels),
                "group": a.group,
                "can_fire": a.can_fire,
                "state": a.verdict.state.value,
                "why": a.verdict.why,
            }
            for a in report.alerts
        ],
        "dashboards": [
            {
                "dashboard": d.name,
                "samples": [{"name": s.name, "values": s.values} for s in d.samples],
                "panels": [
                    {
                        "panel": p.target.panel,
                        "ref": p.target.ref,
                        "verdicts": [
                            {"sample": n, "state": v.state.value, "why": v.why} for n, v in p.verdicts
                        ],
                    }
                    for p in d.panels
                ],
            }
            for d in report.dashboards
        ],
        "rule_groups": [
            {
                "group": g.name,
                "loaded": g.loaded,
                "files": list(g.files),
                "evaluation_seconds": g.evaluation_s,
                "interval_seconds": g.interval_s,
                "errors": [{"rule": r, "error": e} for r, e in g.errors],
                "differences": list(g.differences),
                "records_written": g.records_written,
            }
            for g in report.groups
        ],
        "findings": [
            {
                "level": f.level.value,
                "topic": f.topic.value,
                "subject": f.subject,
                "message": f.message,
                "action": f.action,
            }
            for f in report.findings
        ],
        "advice": {"yaml": report.advice.yaml(), "actions": list(report.advice.actions)},
        "elapsed_seconds": round(report.elapsed_s, 3),
        "requests": report.requests,
        "phases_seconds": report.phases,
        "slowest_requests": [{"seconds": round(t, 3), "request": what} for t, what in report.slowest],
    }
