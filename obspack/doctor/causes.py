"""Problems grouped by what causes them, so that a report leads with a few causes rather than every alert
and panel they break: the cluster label under another name, a source that is not here (or gone), the obspack
exporter's CUDA probe that is off, a label that never appears on a metric, a matcher that never matches, a
dashboard variable that lists nothing, a metric that is not served.

Each problem with failing selectors (an alert that cannot fire, a panel that would be empty) is put under
the cause of each of them; one that needs several missing sources is under each. A consequence is folded
under its root: a matcher `instance=~""` comes from a dashboard variable that lists nothing, and where the
cluster label goes by another name, that is why the variables list nothing (and why a record's join matches
nothing: what reads it is under the label, not under a matcher that also finds nothing beside it); a label
that never appears on cAdvisor's series is the source's own finding (no container label). The root's finding is shown with the
cause, not again as a note. Problems without failing selectors (a rule group not loaded or failing) are
causes of their own. Every cause says what to do (`action`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from obspack.doctor import knowledge as k
from obspack.doctor.checks import Check
from obspack.doctor.findings import Finding, Level, Topic
from obspack.doctor.fit import JOINS_MATCH_NOTHING
from obspack.doctor.sources import SourceReport

CLUSTER = "cluster label"  # the subject of the sources' cluster-label finding


@dataclass(frozen=True)
class Cause:
    key: tuple[str, str]  # (kind, what): ("cluster" | "source" | "probe" | "label" | "matcher" | "variable" | "metric", ...)
    title: str  # what is wrong, in words
    action: str = ""  # what to do about it
    consequences: tuple[Finding, ...] = ()  # the problems it explains
    finding: Finding | None = None  # the finding that states it (a source that is not here), if any
    explained: tuple[Finding, ...] = ()  # notes that follow from it (variables that list nothing), not shown again

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
    causes: tuple[Cause, ...]  # the causes of problems, roots first, then most consequences first
    alone: tuple[Finding, ...]  # problems that are causes of their own
    stated: frozenset[Finding]  # the findings that state a cause (shown with it, not again as notes)


def probe_off(sources: Iterable[SourceReport]) -> bool:
    """The obspack exporter is here but its CUDA allocator probe is in none of its pods."""
    exporter = next((s for s in sources if s.title == "obspack exporter" and s.found), None)
    return exporter is not None and not exporter.details.get("cuda_probe")


@dataclass(frozen=True)
class _Known:
    """What the findings of the sources already say, that a failing selector may follow from."""

    missing: Mapping[str, Finding]  # source title -> its "not here" (or gone) note
    off: bool  # the CUDA probe is off
    cluster: Finding | None  # the cluster label goes by another name (or is on some sources only)
    labels: Mapping[tuple[str, str], Finding]  # (source title, label) -> the source's "no such label" note
    selectors: Mapping[str, str]  # source key -> the configured matchers


def _known(findings: list[Finding], sources: Iterable[SourceReport], selectors: Mapping[str, str]) -> _Known:
    sources = list(sources)
    titles = {s.title for s in sources if not s.found}
    source_findings = [f for f in findings if f.topic is Topic.SOURCE]
    missing = {f.subject: f for f in source_findings if f.subject in titles and f.level is Level.NOTE and f.action}
    cluster = next((f for f in source_findings if f.subject == CLUSTER and (f.fixes or f.action)), None)
    labels = {
        (f.subject, label): f
        for f in source_findings
        for label in ("container", "image")
        if f.message.startswith(f"series carry no {label} label")
    }
    return _Known(missing, probe_off(sources), cluster, labels, {key: v for key, v in selectors.items() if v})


def _key(check: Check, known: _Known) -> tuple[str, str]:
    metric = check.leaf.selector.metric
    source = k.source_of(metric)
    if source is not None and source.title in known.missing:
        return ("source", source.title)
    if known.off and metric.startswith(k.EXPORTER_PROBE_PREFIX):
        return ("probe", "obspack exporter")
    if check.label:
        if source is not None and (source.title, check.label) in known.labels:
            return ("label", f"{source.title}: {known.labels[source.title, check.label].message}")
        return ("label", f"label `{check.label}` never appears on {metric}")
    if check.matcher:
        label, op, value = check.matcher
        if value == "" and op in ("=", "=~"):  # what a dashboard variable that lists nothing puts in its place
            return ("cluster", CLUSTER) if known.cluster is not None else ("variable", label)
        return ("matcher", f"{metric}: {check.reason}")
    return ("metric", f"{metric}: {check.reason}")


def group(findings: Iterable[Finding], sources: Iterable[SourceReport], selectors: Mapping[str, str] | None = None) -> Causes:
    """`selectors`: the pack's configured matchers per source, so a matcher of the user's is named as such."""
    findings = list(findings)
    known = _known(findings, sources, selectors or {})
    under: dict[tuple[str, str], list[Finding]] = {}
    checks: dict[tuple[str, str], Check] = {}
    alone = []
    for f in findings:
        if f.level is not Level.PROBLEM:
            continue
        # A record's join that matches nothing while the cluster label differs between sources: the label is
        # the cause, and a matcher or metric that also finds nothing on the other side of an `or` (the
        # LeaderWorkerSet row's workers, for a pod that leads none) is no cause of its own.
        joins = known.cluster is not None and JOINS_MATCH_NOTHING in f.message
        if not f.causes and not joins:
            alone.append(f)
            continue
        keys: dict[tuple[str, str], Check | None] = {_key(c, known): c for c in f.causes}
        if joins:
            keys = {key: c for key, c in keys.items() if key[0] not in ("matcher", "metric", "variable")}
            keys.setdefault(("cluster", CLUSTER), None)
        if any(kind in ("source", "probe") for kind, _ in keys):
            # A metric of no known source that is never there, next to a source that is not here, is taken
            # as that source's (vLLM's http_requests_total): not a cause of its own.
            keys = {
                key: c
                for key, c in keys.items()
                if key[0] != "metric" or (c is not None and k.source_of(c.leaf.selector.metric))
            }
        for key, check in keys.items():
            under.setdefault(key, []).append(f)
            if check is not None:
                checks.setdefault(key, check)
    causes = [_cause(key, tuple(found), checks.get(key), known) for key, found in under.items()]
    causes = [_with_notes(c, findings) if c.key[0] == "cluster" else c for c in causes]
    causes.sort(key=lambda c: (_ORDER.index(c.key[0]), -len(c.consequences), c.title))
    stated = frozenset(
        [c.finding for c in causes if c.finding is not None] + [f for c in causes for f in c.explained]
    )
    return Causes(tuple(causes), tuple(f for f in alone if f not in stated), stated)


def _with_notes(cause: Cause, findings: list[Finding]) -> Cause:
    """The cluster label's cause also explains the notes of variables that list nothing and of queries whose
    joins match nothing."""
    explained = tuple(
        f
        for f in findings
        if f.level is Level.NOTE
        and (
            (f.topic is Topic.VARIABLE and f.message.startswith(EMPTY_VARIABLE))
            or JOINS_MATCH_NOTHING in f.message
        )
    )
    return dataclasses.replace(cause, explained=explained)


EMPTY_VARIABLE = "lists no values"  # how fit.py's note on a variable that lists nothing begins
_ORDER = ("cluster", "source", "probe", "label", "variable", "matcher", "metric")


JOIN_FIX = (
    "compare the labels the rule joins on (the cluster label, namespace, pod) on the series of each source it "
    "reads: one source labels them differently, or not at all"
)


def fix_of(finding: Finding) -> str:
    """What a finding says to do: its action without the subject it starts with, or its config change."""
    if finding.action:
        return finding.action.partition(": ")[2] or finding.action
    changes = "; ".join(f"set {'.'.join(fix.path)}: {fix.value} in obspack.yaml" for fix in finding.fixes)
    if changes:
        return f"{changes} (see Advice)"
    return JOIN_FIX if JOINS_MATCH_NOTHING in finding.message else ""


def _cause(key: tuple[str, str], consequences: tuple[Finding, ...], check: Check | None, known: _Known) -> Cause:
    kind, what = key
    if kind == "cluster":
        stated = known.cluster
        assert stated is not None
        return Cause(key, f"{CLUSTER}: {stated.message}", fix_of(stated), consequences, stated)
    assert check is not None
    metric = check.leaf.selector.metric
    source = k.source_of(metric)
    if kind == "source":
        stated = known.missing[what]
        return Cause(key, f"{what}: {stated.message}", fix_of(stated), consequences, stated)
    if kind == "probe":
        return Cause(
            key,
            "obspack exporter: its CUDA allocator probe is off (no obspack_cuda_* series from any pod)",
            "run vLLM with the obspack CUDA probe (docs/exporter.md), or switch off the alerts that read it "
            "(see Advice)",
            consequences,
        )
    if kind == "label":
        stated = next((f for (title, _), f in known.labels.items() if what == f"{title}: {f.message}"), None)
        if stated is not None:
            return Cause(key, what, fix_of(stated), consequences, stated)
        where = f"{source.title}'s scrape" if source else "the scrape"
        action = (
            f"find where `{check.label}` is lost before it is stored: the relabelling of {where} (labeldrop, "
            "metric_relabel_configs) or the exporter's version"
        )
        return Cause(key, what, action + _selector_hint(check, known), consequences)
    if kind == "variable":
        title = (
            f"dashboard variables list no values, so their queries hold `{what}=~\"\"`, which matches only "
            "series without the label"
        )
        action = "see the notes on the variables that list no values: their query finds nothing on this server"
        return Cause(key, title, action, consequences)
    if kind == "matcher":
        label, op, value = check.matcher or ("", "", "")
        seen = f" (it has {', '.join(check.seen[:5])})" if check.seen else ""
        action = (
            f"{metric}'s `{label}` never matches {op}\"{value}\"{seen}: check how "
            f"{source.title if source else 'its exporter'} labels it"
        )
        return Cause(key, what, action + _selector_hint(check, known), consequences)
    if metric.startswith(k.DCGM_PROFILING):
        return Cause(key, what, k.DCGM_PROFILING_FIX, consequences)
    action = (
        f"{source.title} does not serve {metric}: check its version and the metrics it is set to export, and that "
        "no relabelling drops it"
        if source
        else f"nothing serves {metric} here: check that its exporter runs and is scraped"
    )
    return Cause(key, what, action, consequences)


def _selector_hint(check: Check, known: _Known) -> str:
    """Where the failing matcher or label is the user's own (`selectors.<key>`), say so."""
    for key, text in known.selectors.items():
        label = check.matcher[0] if check.matcher else check.label
        if label and label in text:
            return f"; or change selectors.{key} (see Advice)"
    return ""
