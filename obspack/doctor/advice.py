"""Turn findings into config changes to paste into obspack.yaml, and into actions outside it.

- A selector fails on a matcher that `selectors.<source>` put there: replace it with the values the label
  does have on that metric (up to three), or drop it.
- An alert cannot fire only because an optional source is not deployed (the obspack exporter, its CUDA
  probe): switch the alert off, or deploy the source.
- Findings may carry their own fixes (the cluster label) and actions (install a source, load the rules).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import promql_parser
import yaml

from obspack.doctor import knowledge as k
from obspack.doctor.checks import Check
from obspack.doctor.findings import Finding, Fix, Level, Topic
from obspack.doctor.needs import Matcher, Selector

MAX_VALUES = 3  # a failing matcher is replaced by the label's values when it has this many or fewer


@dataclass(frozen=True)
class Advice:
    fixes: tuple[Fix, ...]
    actions: tuple[str, ...]

    def yaml(self) -> str:
        """The fixes as one YAML document, each with its reason as a comment above it."""
        tree: dict[str, Any] = {}
        for fix in self.fixes:
            node = tree
            for part in fix.path[:-1]:
                node = node.setdefault(part, {})
            node[fix.path[-1]] = fix.value
        lines: list[str] = []
        _emit(tree, {f.path: f.comment for f in self.fixes if f.comment}, (), lines)
        return "".join(f"{line}\n" for line in lines)


def _emit(
    tree: dict[str, Any], comments: dict[tuple[str, ...], str], path: tuple[str, ...], lines: list[str]
) -> None:
    pad = "  " * len(path)
    for key in sorted(tree):
        here = path + (key,)
        if isinstance(tree[key], dict):
            lines.append(f"{pad}{key}:")
            _emit(tree[key], comments, here, lines)
            continue
        if here in comments:
            lines.append(f"{pad}# {comments[here]}")
        value = yaml.safe_dump(tree[key], default_flow_style=True, width=10_000).strip()
        lines.append(f"{pad}{key}: {value.removesuffix('...').strip()}")


def _matchers(text: str) -> tuple[Matcher, ...]:
    return Selector.of(promql_parser.parse(f"obspack_probe{{{text}}}")).matchers


def _inner(matchers: Iterable[Matcher]) -> str:
    return str(Selector("", tuple(matchers)))[1:-1]


def _selector_fix(key: str, text: str, check: Check) -> Fix | None:
    """A change to `selectors.<key>` when one of its matchers is what fails `check`."""
    ours = _matchers(text)
    metric = check.leaf.selector.metric
    if check.matcher in ours:
        label, op, value = check.matcher
        why = f'{label}{op}"{value}" matches nothing on {metric}'
        seen = check.seen
        replacement: list[Matcher] = []
        if seen and op in ("=", "=~") and len(seen) <= MAX_VALUES:
            replacement = [(label, "=", seen[0]) if len(seen) == 1 else (label, "=~", "|".join(seen))]
            why += f"; it has {', '.join(seen)}"
        kept = [new for m in ours for new in (replacement if m == check.matcher else [m])]
        return Fix(("selectors", key), _inner(kept), why)
    if check.label and any(m[0] == check.label for m in ours):
        kept = [m for m in ours if m[0] != check.label]
        return Fix(("selectors", key), _inner(kept), f"label {check.label} never appears on {metric}")
    return None


def _optional_source(causes: Iterable[Check]) -> k.Source | None:
    sources = {k.source_of(c.leaf.selector.metric) for c in causes}
    if len(sources) == 1:
        (source,) = sources
        if source is not None and source.optional:
            return source
    return None


def _switch_off(causes: tuple[Check, ...], missing: set[str], probe_off: bool) -> str | None:
    """Why an alert that reads only an optional source can be switched off: the source is not here, or
    (the obspack exporter) its CUDA probe is off; None when neither is why it cannot fire."""
    source = _optional_source(causes)
    if source is None:
        return None
    if source.title in missing:
        return f"it reads the {source.title}, which is not here; or: {source.install}"
    if probe_off and all(c.leaf.selector.metric.startswith(k.EXPORTER_PROBE_PREFIX) for c in causes):
        return (
            f"it reads the CUDA allocator probe of the {source.title}, which is off; or: run vLLM with the "
            "probe (docs/exporter.md)"
        )
    return None


def advise(selectors: Mapping[str, str], findings: Iterable[Finding], *, probe_off: bool = False) -> Advice:
    """`selectors`: the pack's selectors per source; `probe_off`: the obspack exporter is here without its
    CUDA probe."""
    fixes: dict[tuple[str, ...], Fix] = {}
    actions: dict[str, None] = {}
    selectors = {key: text for key, text in selectors.items() if text}
    findings = list(findings)
    missing = {
        f.subject
        for f in findings
        if f.topic is Topic.SOURCE and f.level is Level.NOTE and f.message.startswith(("not found", "gone"))
    }
    for finding in findings:
        for fix in finding.fixes:
            fixes.setdefault(fix.path, fix)
        if finding.action:
            actions.setdefault(finding.action)
        if finding.level is not Level.PROBLEM or not finding.causes:
            continue
        for check in finding.causes:
            for key, text in selectors.items():
                fix = _selector_fix(key, text, check)
                if fix is not None:
                    fixes.setdefault(fix.path, fix)
        why = _switch_off(finding.causes, missing, probe_off)
        if finding.topic is Topic.ALERT and why is not None:
            path = ("alerts", finding.subject, "enabled")
            fixes.setdefault(path, Fix(path, False, why))
    return Advice(tuple(fixes[p] for p in sorted(fixes)), tuple(actions))
