"""Shipped test files that load only the rule groups their checks need, for the suite's repeated runs.

promtool evaluates every group of the rule files at every step of every test, so a test of the gateway's
alerts pays for the cost and SLO records too: most of a run's time goes to groups whose results no check
reads. A group can change what a check sees only through the series it writes (records; ALERTS and
ALERTS_FOR_STATE for alert groups), so a test file run with the groups that write what its checks read,
and what those groups read in turn, gives the same results as the whole rule files, in either group order.

One canonical run of each config's files stays whole, as users run them (tests/rules/test_promtool.py);
the suite's other runs of the same files (another config, the reversed group order, hostile selectors,
the scope, the fuzzed configs) use `needed_only`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import promql_parser
import yaml

from obspack.promql import token, walk
from obspack.render.yamlfmt import dump

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the rule and test files are large
ALERT_SERIES = frozenset({"ALERTS", "ALERTS_FOR_STATE"})  # what alert groups write besides firing alerts


@cache
def reads(expr: str) -> frozenset[str] | None:
    """The metric names an expression reads; None when it may read any (a selector without a fixed
    name, or an expression promql_parser refuses): then every group is kept."""
    names: set[str] = set()
    unnamed = False

    def visit(node: object) -> bool:
        nonlocal unnamed
        if isinstance(node, promql_parser.VectorSelector):
            fixed = [m.value for m in node.matchers.matchers if m.name == "__name__" and token(m.op) == "equal"]
            name = node.name or (fixed[0] if fixed else None)
            if name is None:
                unnamed = True
            else:
                names.add(name)
        return True

    try:
        walk(promql_parser.parse(expr), visit)
    except (ValueError, TypeError):
        return None
    return None if unnamed else frozenset(names)


def load(text: str) -> Any:
    """YAML text as data, through libyaml when PyYAML has it (ten times faster than its Python parser)."""
    return yaml.load(text, Loader=_Loader)


def _writes(group: dict, alerts: bool) -> set[str]:
    return {r.get("record") or r["alert"] for r in group["rules"]} | (set(ALERT_SERIES) if alerts else set())


def needed_groups(groups: Sequence[tuple[dict, bool]], wanted: set[str] | None) -> set[str]:
    """Names of the groups (each with whether it is an alert group) that write what `wanted` names, and of
    the groups those read from, transitively. `wanted` None keeps every group."""
    kept: set[str] = set()
    todo = None if wanted is None else set(wanted)
    done: set[str] = set()
    while todo is None or todo:
        if todo is None:
            return {g["name"] for g, _ in groups}
        name = todo.pop()
        done.add(name)
        for group, alerts in groups:
            if group["name"] in kept or name not in _writes(group, alerts):
                continue
            kept.add(group["name"])
            for rule in group["rules"]:
                read = reads(rule["expr"])
                if read is None:
                    return {g["name"] for g, _ in groups}
                todo |= read - done
    return kept


def _wanted(spec: dict) -> set[str] | None:
    """What a test file's checks read: the alerts it names, and the metrics of its expressions."""
    wanted: set[str] = set()
    for case in spec.get("tests") or []:
        wanted |= {check["alertname"] for check in case.get("alert_rule_test") or []}
        for check in case.get("promql_expr_test") or []:
            read = reads(check["expr"])
            if read is None:
                return None
            wanted |= read
    return wanted


def needed_only(tests: Path, names: Sequence[str], into: Path) -> Path:
    """Copies of the test files `names` of the folder `tests`, written into `into` with the same names, each
    loading its own copies of its rule files with only the groups its checks need (group_eval_order keeps
    the kept groups' order). Run promtool in `into`."""
    into.mkdir(parents=True, exist_ok=True)
    for name in names:
        spec = load((tests / name).read_text(encoding="utf-8"))
        files = [(rel, load((tests / rel).read_text(encoding="utf-8")) or {}) for rel in spec["rule_files"]]
        groups = [(g, any("alert" in r for r in g["rules"])) for _, doc in files for g in doc.get("groups") or []]
        kept = needed_groups(groups, _wanted(spec))
        own = into / f"{Path(name).stem}.rules"
        own.mkdir(exist_ok=True)
        spec["rule_files"] = []
        for i, (rel, doc) in enumerate(files):
            target = own / f"{i}-{Path(rel).name}"
            narrowed = {**doc, "groups": [g for g in doc.get("groups") or [] if g["name"] in kept]}
            target.write_text(dump(narrowed), encoding="utf-8")
            spec["rule_files"].append(str(target.relative_to(into)))
        if "group_eval_order" in spec:
            spec["group_eval_order"] = [g for g in spec["group_eval_order"] if g in kept]
        (into / name).write_text(dump(spec), encoding="utf-8")
    return into
