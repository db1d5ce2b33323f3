"""Do the records a dashboard averages over long windows have that much history on the server?

A rule that averages a record over a window (the SLO page's 30-day period, its 1h to 3d burn windows) has
data as soon as the record it reads has one sample, but it means what its name says only once that
record has the whole window behind it: its history starts when its rule first ran, and ends at the
server's retention. The fit (fit.py) asks whether the records have data; this asks, per dashboard, whether
each record it reads over a window, directly or through the rules of the records it reads, had data at
the start of that window. Alerts are left out: they read what history there is, and their low-traffic
guards count only that.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from obspack.doctor.api import PrometheusAPI, QueryFailed
from obspack.doctor.findings import Finding, Topic, note, unchecked
from obspack.doctor.needs import Need, PackNeeds, record_refs
from obspack.durations import format_s
from obspack.promql import grafana_to_promql

_OVER_RANGE = re.compile(r"\$__range\b|\$\{__range\}")


def windows(needs: PackNeeds, dashboard: str) -> dict[str, tuple[int, ...]]:
    """Per record, the windows (seconds, ascending) the dashboard's panels read it over, directly or
    through the rules of the records they read."""
    found: dict[str, set[int]] = {}
    seen: set[str] = set()

    def visit(need: Need) -> None:
        for ref in record_refs(need):
            if ref.range_s:
                found.setdefault(ref.name, set()).add(ref.range_s)
            if ref.name not in seen:
                seen.add(ref.name)
                for rule in needs.records[ref.name]:
                    visit(rule.need)

    for target in needs.targets:
        if target.dashboard == dashboard:
            # a sum over the range the reader picks (the cost page) counts what that range holds: the window
            # needs no history, so it is read as an instant (1ms rounds to no window)
            visit(needs.need(grafana_to_promql(_OVER_RANGE.sub("1ms", target.expr))))
    return {name: tuple(sorted(ws)) for name, ws in sorted(found.items())}


@dataclass(frozen=True)
class Held:
    """How far back a record has data: it had data at the start of `covered` windows, not of the rest."""

    now: bool
    covered: tuple[int, ...]
    short: tuple[int, ...]

    def text(self) -> str:
        if not self.now:
            return "no data yet"
        less = f"less than {format_s(self.short[0], coarse=True)}"
        return (
            f"data for more than {format_s(self.covered[-1], coarse=True)} but {less}"
            if self.covered
            else f"data for {less}"
        )


def _held(api: PrometheusAPI, name: str, spans: tuple[int, ...], at: float) -> Held | QueryFailed:
    """A failure: the server could not say."""
    answers = api.map(lambda back: api.query(f"count({name})", at - back), (0, *spans))
    failed = next((a for a in answers if isinstance(a, QueryFailed)), None)
    if failed is not None:
        return failed
    now, *starts = (bool(a) for a in answers)
    covered = tuple(w for w, had in zip(spans, starts) if had and now)
    return Held(now, covered, tuple(w for w in spans if w not in covered))


def history_findings(api: PrometheusAPI, needs: PackNeeds, at: float) -> list[Finding]:
    """A note per dashboard that reads records over windows longer than their history here (and one
    that says which records' history could not be asked)."""
    out = []
    for dashboard in dict.fromkeys(t.dashboard for t in needs.targets):
        read = windows(needs, dashboard)
        held = {name: _held(api, name, spans, at) for name, spans in read.items()}
        short: dict[str, list[str]] = {}  # how much history -> the records that have that much
        for name, h in held.items():
            if isinstance(h, Held) and h.short:
                short.setdefault(h.text(), []).append(name)
        if short:
            out.append(note(Topic.DASHBOARD, dashboard, _message(read, short)))
        failed = {name: h for name, h in held.items() if isinstance(h, QueryFailed)}
        if failed:
            message = f"the history of {_names(failed)} could not be asked: {next(iter(failed.values()))}"
            out.append(unchecked(Topic.DASHBOARD, dashboard, message))
    return out


def _message(read: dict[str, tuple[int, ...]], short: dict[str, list[str]]) -> str:
    longest = format_s(max(w for spans in read.values() for w in spans), coarse=True)
    if len(short) == 1 and len(next(iter(short.values()))) == len(
        read
    ):  # all alike: no need to name them again
        held = f"{'it has' if len(read) == 1 else 'they have'} {next(iter(short))}"
    else:
        held = "; ".join(
            f"{_names(names)} {'has' if len(names) == 1 else 'have'} {text}" for text, names in short.items()
        )
    return (
        f"needs {longest} of history: it reads {_names(read)} over windows of up to {longest} (through "
        f"recording rules), and here {held}: until then, a longer window holds only the history there is"
    )


def _names(names: Iterable[str]) -> str:
    listed = list(names)
    return ", ".join(listed[:-1]) + " and " + listed[-1] if len(listed) > 1 else listed[0]
