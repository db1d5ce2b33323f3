"""Walking a Pack: every PromQL expression it renders (rules, panel queries, variable queries), and a
real parser's verdict on each, for `obspack validate`, the doctor and the tests."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import promql_parser

from obspack.durations import format_s
from obspack.pack.model import Pack
from obspack.promql import grafana_to_promql, walk

_VARIABLE_QUERY = re.compile(r"(label_values|query_result)\((.*)\)", re.S)


@dataclass(frozen=True)
class Target:
    """One query of one dashboard panel, as Grafana holds it (template variables included)."""

    dashboard: str
    panel: str
    ref: str
    expr: str
    panel_id: int = 0
    row: str = ""  # the variable its (collapsed) row repeats over: no value, no row to open

    @property
    def panel_where(self) -> str:
        return f"{self.dashboard} / {self.panel}"

    @property
    def where(self) -> str:
        return f"{self.panel_where} [{self.ref}]"


@dataclass(frozen=True)
class Variable:
    """A dashboard's query variable: `label_values(selector, label)` or `query_result(expr)`."""

    dashboard: str
    name: str
    function: str
    selector: str  # the selector or expression, with template variables
    label: str  # empty for query_result
    multi: bool
    all_value: str | None
    regex: str = ""  # Grafana's regex over the listed values (`/.../`; its first group is the value)


def _walk_panels(panels: list[dict[str, object]]) -> Iterator[dict[str, object]]:
    for panel in panels:
        yield panel
        yield from _walk_panels(panel.get("panels", []) or [])  # type: ignore[arg-type]


def panels_by_row(panels: list[dict[str, object]]) -> Iterator[tuple[dict[str, object], str]]:
    """Every panel with the variable its row repeats over ("" outside repeated rows); a collapsed row
    holds its panels, an open one is followed by them."""
    repeat = ""
    for panel in panels:
        if panel.get("type") == "row":
            repeat = str(panel.get("repeat") or "")
            yield panel, ""
            for inner in _walk_panels(panel.get("panels", []) or []):  # type: ignore[arg-type]
                yield inner, repeat
            continue
        for inner in _walk_panels([panel]):
            yield inner, repeat


def targets(pack: Pack) -> Iterator[Target]:
    for dashboard in pack.dashboards:
        for panel, row in panels_by_row(dashboard.model.get("panels", [])):  # type: ignore[arg-type]
            for target in panel.get("targets", []) or []:  # type: ignore[union-attr]
                if target.get("expr"):
                    title, ref = str(panel.get("title")), str(target.get("refId"))
                    yield Target(dashboard.name, title, ref, target["expr"], int(panel.get("id") or 0), row)


def variables(pack: Pack) -> Iterator[Variable]:
    for dashboard in pack.dashboards:
        for variable in dashboard.model.get("templating", {}).get("list", []):  # type: ignore[union-attr]
            query = variable.get("query")
            text = query.get("query") if isinstance(query, dict) else query
            if variable.get("type") != "query" or not isinstance(text, str):
                continue
            found = _VARIABLE_QUERY.fullmatch(text.strip())
            if not found:
                continue
            function, inner = found.groups()
            selector, label = inner.rsplit(",", 1) if function == "label_values" else (inner, "")
            yield Variable(
                dashboard=dashboard.name,
                name=variable["name"],
                function=function,
                selector=selector.strip(),
                label=label.strip(),
                multi=bool(variable.get("multi")),
                all_value=variable.get("allValue") if variable.get("includeAll") else None,
                regex=str(variable.get("regex") or ""),
            )


def expressions(pack: Pack) -> Iterator[tuple[str, str]]:
    """(where, expr) for each rule and each dashboard query, with Grafana variables substituted."""
    for group in pack.recording_groups + pack.alert_groups:
        for rule in group.rules:
            name = getattr(rule, "record", None) or rule.alert
            yield f"{group.name}/{name}", rule.expr
    for target in targets(pack):
        yield f"{target.dashboard}/{target.panel}", grafana_to_promql(target.expr)
    for variable in variables(pack):
        yield f"{variable.dashboard}/${variable.name}", grafana_to_promql(variable.selector)


# Prometheus 3 normalises `le` and `quantile` values on ingest ("1" becomes "1.0"), so a matcher on an
# integer spelling stops matching; and its windows are left-open, so a window holds one sample fewer.
NORMALISED_LABELS = ("le", "quantile")
COUNTER_FUNCTIONS = ("rate", "irate", "increase")
_INTEGER = re.compile(r"[+-]?[0-9]+")


def prometheus3_problems(pack: Pack, longest_scrape_interval: str) -> list[str]:
    """Rules and panels that would change meaning on Prometheus 3: a matcher on an integer `le` or
    `quantile` spelling, and a rate/increase window shorter than twice the longest scrape interval (the
    config's `scrape_interval`): Prometheus 3's windows are left-open, so a shorter one can hold one sample."""
    shortest = 2 * promql_parser.parse_duration(longest_scrape_interval)
    problems = []

    def check(where: str, node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            for m in node.matchers.matchers:
                spellings = m.value.split("|") if str(m.op).endswith("Re") else [m.value]
                if m.name in NORMALISED_LABELS and any(_INTEGER.fullmatch(v) for v in spellings):
                    problems.append(f"{where}: {m} matches an integer {m.name} that Prometheus 3 rewrites")
        elif isinstance(node, promql_parser.Call) and node.func.name in COUNTER_FUNCTIONS:
            window = next((a for a in node.args if isinstance(a, promql_parser.MatrixSelector)), None)
            if window is not None and window.range < shortest:
                problems.append(
                    f"{where}: {node.func.name} over {format_s(window.range.total_seconds())} is shorter "
                    f"than twice the longest scrape interval ({longest_scrape_interval})"
                )

    for where, expr in expressions(pack):
        walk(promql_parser.parse(expr), lambda node, w=where: check(w, node))
    return problems


def parse_errors(pack: Pack) -> list[str]:
    problems = []
    for where, expr in expressions(pack):
        try:
            promql_parser.parse(expr)
        except Exception as e:  # noqa: BLE001 - the parser raises ValueError, sometimes bare
            problems.append(f"{where}: {e}")
    return problems
