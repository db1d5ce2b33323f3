"""Every PromQL expression obspack renders, and a real parser's verdict on each."""

from __future__ import annotations

import re
from collections.abc import Iterator

import promql_parser

from obspack.render.bundle import Pack

# Grafana variables that stand for durations or label values inside dashboard queries.
_GRAFANA_DURATIONS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h", "${__range}": "1h"}
_GRAFANA_VARIABLE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*(?::[a-z]+)?\}?")


def grafana_to_promql(expr: str) -> str:
    """Replace Grafana's variables so a dashboard query can go through a PromQL parser."""
    for variable, value in _GRAFANA_DURATIONS.items():
        expr = expr.replace(variable, value)
    return _GRAFANA_VARIABLE.sub("x", expr)


def metric_names(expr: str) -> set[str]:
    """The metric name of every selector in a PromQL expression (Grafana variables allowed)."""
    names: set[str] = set()

    def visit(node: object) -> bool:
        if isinstance(node, promql_parser.VectorSelector):
            name = node.name or next(
                (m.value for m in node.matchers.matchers if m.name == "__name__" and str(m.op).endswith(".Equal")),
                None,
            )
            if name:
                names.add(name)
        return True

    promql_parser.walk(promql_parser.parse(grafana_to_promql(expr)), visit)
    return names


def _walk_panels(panels: list[dict[str, object]]) -> Iterator[dict[str, object]]:
    for panel in panels:
        yield panel
        yield from _walk_panels(panel.get("panels", []) or [])  # type: ignore[arg-type]


def expressions(pack: Pack) -> Iterator[tuple[str, str]]:
    """(where, expr) for each rule and each dashboard query, with Grafana variables substituted."""
    for group in pack.recording_groups + pack.alert_groups:
        for rule in group.rules:
            name = getattr(rule, "record", None) or rule.alert
            yield f"{group.name}/{name}", rule.expr
    for dashboard in pack.dashboards:
        for panel in _walk_panels(dashboard.model.get("panels", [])):  # type: ignore[arg-type]
            for target in panel.get("targets", []) or []:  # type: ignore[union-attr]
                expr = target.get("expr")
                if expr:
                    yield f"{dashboard.name}/{panel.get('title')}", grafana_to_promql(expr)
        for variable in dashboard.model.get("templating", {}).get("list", []):  # type: ignore[union-attr]
            query = variable.get("query")
            text = query.get("query") if isinstance(query, dict) else query
            if variable.get("type") == "query" and isinstance(text, str):
                inner = re.fullmatch(r"(?:label_values|query_result)\((.*)\)", text.strip(), re.S)
                if inner:
                    selector = inner.group(1).rsplit(",", 1)[0] if text.startswith("label_values") else inner.group(1)
                    yield f"{dashboard.name}/${variable.get('name')}", grafana_to_promql(selector)


def parse_errors(pack: Pack) -> list[str]:
    problems = []
    for where, expr in expressions(pack):
        try:
            promql_parser.parse(expr)
        except Exception as e:  # noqa: BLE001 - the parser raises ValueError, sometimes bare
            problems.append(f"{where}: {e}")
    return problems
