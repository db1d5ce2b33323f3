"""Problems grouped by what causes them, so that a report leads with a few causes rather than every alert
and panel they break: a source that is not here (or gone), the obspack exporter's CUDA probe that is off,
a label that never appears on a metric, a matcher that never matches, a metric that is not served.

Each problem with failing selectors (an alert that cannot fire, a panel that would be empty) is put under
the cause of each of them; one that needs several missing sources is under each. Problems without failing
selectors (a rule group not loaded or failing, clusters merged) are causes of their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from obspack.doctor import knowledge as k
from obspack.doctor.checks import Check
from obspack.doctor.findings import Finding, Level, Topic
from obspack.doctor.sources import SourceReport


@dataclass(frozen=True)
class Cause:
    key: tuple[
        str, str
    ]  # (kind, what): ("source", "vLLM"), ("probe", ...), ("label" | "matcher" | "metric", ...)
    title: str  # what is wrong, in words
    action: str = ""  # what to do about it
    consequences: tuple[Finding, ...] = ()  # the problems it explains
    finding: Finding | None = None  # the finding that states it (a source that is not here), if any

    @property
    def alerts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.subject for f in self.consequences if f.topic is Topic.ALERT))

    @property
    def panels(self) -> dict[str, int]:
        """Panels that would be empty, counted per dashboard."""
        out: dict[str, int] = {}
        for f in self.consequences:
            if f.topic is Topic.PANEL:
                dashboard = f.subject.partition(" / ")[0]
                out[dashboard] = out.get(dashboard, 0) + 1
        return out


@dataclass(frozen=True)
class Causes:
    causes: tuple[Cause, ...]  # the causes of problems, most consequences first
    alone: tuple[Finding, ...]  # problems that are causes of their own
    stated: frozenset[Finding]  # the findings that state a cause (shown with it, not again as notes)


def probe_off(sources: Iterable[SourceReport]) -> bool:
    """The obspack exporter is here but its CUDA allocator probe is in none of its pods."""
    exporter = next((s for s in sources if s.title == "obspack exporter" and s.found), None)
    return exporter is not None and not exporter.details.get("cuda_probe")


def _key(check: Check, missing: Mapping[str, Finding], off: bool) -> tuple[str, str]:
    metric = check.leaf.selector.metric
    source = k.source_of(metric)
    if source is not None and source.title in missing:
        return ("source", source.title)
    if off and metric.startswith(k.EXPORTER_PROBE_PREFIX):
        return ("probe", "obspack exporter")
    if check.label:
        return ("label", f"label `{check.label}` never appears on {metric}")
    if check.matcher:
        return ("matcher", f"{metric}: {check.reason}")
    return ("metric", f"{metric}: {check.reason}")


def group(findings: Iterable[Finding], sources: Iterable[SourceReport]) -> Causes:
    findings = list(findings)
    titles = {s.title for s in sources if not s.found}
    missing = {
        f.subject: f
        for f in findings
        if f.topic is Topic.SOURCE and f.subject in titles and f.level is Level.NOTE and f.action
    }
    off = probe_off(sources)
    under: dict[tuple[str, str], list[Finding]] = {}
    alone = []
    for f in findings:
        if f.level is not Level.PROBLEM:
            continue
        if not f.causes:
            alone.append(f)
            continue
        keys = {_key(c, missing, off): c for c in f.causes}
        if any(kind in ("source", "probe") for kind, _ in keys):
            # A metric of no known source that is never there, next to a source that is not here, is taken
            # as that source's (vLLM's http_requests_total): not a cause of its own.
            keys = {
                key: c for key, c in keys.items() if key[0] != "metric" or k.source_of(c.leaf.selector.metric)
            }
        for key in keys:
            under.setdefault(key, []).append(f)
    causes = [_cause(key, tuple(found), missing) for key, found in under.items()]
    causes.sort(key=lambda c: (_ORDER.index(c.key[0]), -len(c.consequences), c.title))
    stated = frozenset(c.finding for c in causes if c.finding is not None)
    return Causes(tuple(causes), tuple(alone), stated)


_ORDER = ("source", "probe", "label", "matcher", "metric")


def _cause(key: tuple[str, str], consequences: tuple[Finding, ...], missing: Mapping[str, Finding]) -> Cause:
    kind, what = key
    if kind == "source":
        stated = missing[what]
        action = stated.action.partition(": ")[2] or stated.action
        return Cause(key, f"{what}: {stated.message}", action, consequences, stated)
    if kind == "probe":
        return Cause(
            key,
            "obspack exporter: its CUDA allocator probe is off (no obspack_cuda_* series from any pod)",
            "run vLLM with the obspack CUDA probe (docs/exporter.md), or switch off the alerts that read it "
            "(see Advice)",
            consequences,
        )
    return Cause(key, what, "", consequences)
