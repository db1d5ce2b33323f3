"""Every PromQL expression obspack renders, and a real parser's verdict on each.

`targets(pack)` and `variables(pack)` walk the dashboards; `grafana_to_promql` turns a dashboard query into
plain PromQL, with Grafana's duration variables replaced and its template variables set to given values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import promql_parser

if TYPE_CHECKING:  # walking a Pack needs only its attributes; a runtime import would be a cycle
    from obspack.render.bundle import Pack

# Grafana variables that stand for durations or label values inside dashboard queries.
_GRAFANA_DURATIONS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h", "${__range}": "1h"}
_GRAFANA_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}?")
_VARIABLE_QUERY = re.compile(r"(label_values|query_result)\((.*)\)", re.S)


def grafana_to_promql(expr: str, values: Mapping[str, str] | None = None) -> str:
    """Replace Grafana's variables so a dashboard query can go through a PromQL parser.

    `values` maps a template variable's name to the text Grafana would put in its place; variables not
    in it become `x`."""
    for variable, value in _GRAFANA_DURATIONS.items():
        expr = expr.replace(variable, value)
    chosen = values or {}
    return _GRAFANA_VARIABLE.sub(lambda m: chosen.get(m.group(1), "x"), expr)


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


Matcher = tuple[str, str, str]  # label, operator (=, !=, =~, !~), value
_OPS = {"equal": "=", "notequal": "!=", "re": "=~", "notre": "!~"}


# PromQL string literals: double- or single-quoted with backslash escapes, or backquoted and raw.
_STRING_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|`[^`]*`')
_HIDDEN = 0xE000  # a string becomes one private-use character in quotes, about as wide as most strings
_PLACEHOLDER = re.compile('"([\ue000-\uf8ff])"')


def hide_strings(expr: str) -> tuple[str, Callable[[str], str]]:
    """The expression with every string literal replaced by a short placeholder, and the function that
    puts the literals back, each exactly as written. promql_parser prints strings without their escapes
    (`"a\\"b"` comes back as `"a"b"`), so an expression that is parsed, rewritten and printed again must
    go through the parser without the strings it cannot print."""
    literals: list[str] = []

    def hide(match: re.Match[str]) -> str:
        if len(literals) > 0xF8FF - _HIDDEN:
            raise ValueError("more string literals than placeholders")
        literals.append(match.group())
        return f'"{chr(_HIDDEN + len(literals) - 1)}"'

    hidden = _STRING_LITERAL.sub(hide, expr)

    def restore(text: str) -> str:
        return _PLACEHOLDER.sub(lambda m: literals[ord(m.group(1)) - _HIDDEN], text)

    return hidden, restore


def raw_strings_quoted(text: str) -> str:
    """Backquoted (raw) strings written as double-quoted ones with the same value: promql_parser refuses a
    backslash inside backquotes, which Prometheus reads as a plain character."""
    return re.sub(
        _STRING_LITERAL,
        lambda m: json.dumps(m.group()[1:-1], ensure_ascii=False) if m.group().startswith("`") else m.group(),
        text,
    )


def token(value: object) -> str:
    """A promql_parser token (operator, matcher op, modifier type) by its bare lower-case name: `sum`,
    `unless`, `by`, `include`, `notre`."""
    return str(value).rsplit(".", 1)[-1].strip().lower()


def selectors(expr: str) -> list[tuple[str, tuple[Matcher, ...]]]:
    """The metric name and the other label matchers of every selector in a PromQL expression (Grafana
    variables allowed); selectors without a fixed name are left out."""
    found: list[tuple[str, tuple[Matcher, ...]]] = []

    def visit(node: object) -> bool:
        if isinstance(node, promql_parser.VectorSelector):
            matchers = [(m.name, _OPS[token(m.op)], m.value) for m in node.matchers.matchers]
            name = node.name or next((v for label, op, v in matchers if label == "__name__" and op == "="), None)
            if name:
                found.append((name, tuple(m for m in matchers if m[0] != "__name__")))
        return True

    promql_parser.walk(promql_parser.parse(grafana_to_promql(expr)), visit)
    return found


def metric_names(expr: str) -> set[str]:
    """The metric name of every selector in a PromQL expression (Grafana variables allowed)."""
    return {name for name, _ in selectors(expr)}


def may_match(matchers: tuple[Matcher, ...], labels: dict[str, str]) -> bool:
    """Whether series carrying these fixed labels (and any others) can satisfy the matchers: a matcher on a
    label the series does not fix could go either way."""
    for label, op, value in matchers:
        if label not in labels:
            continue
        hit = labels[label] == value if op in ("=", "!=") else re.fullmatch(value, labels[label]) is not None
        if hit != (op in ("=", "=~")):
            return False
    return True


def _walk_panels(panels: list[dict[str, object]]) -> Iterator[dict[str, object]]:
    for panel in panels:
        yield panel
        yield from _walk_panels(panel.get("panels", []) or [])  # type: ignore[arg-type]


def _rows(panels: list[dict[str, object]]) -> Iterator[tuple[dict[str, object], str]]:
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
        for panel, row in _rows(dashboard.model.get("panels", [])):  # type: ignore[arg-type]
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
                    f"{where}: {node.func.name} over {promql_parser.display_duration(window.range)} is shorter "
                    f"than twice the longest scrape interval ({longest_scrape_interval})"
                )

    for where, expr in expressions(pack):
        promql_parser.walk(promql_parser.parse(expr), lambda node, w=where: check(w, node))
    return problems


def parse_errors(pack: Pack) -> list[str]:
    problems = []
    for where, expr in expressions(pack):
        try:
            promql_parser.parse(expr)
        except Exception as e:  # noqa: BLE001 - the parser raises ValueError, sometimes bare
            problems.append(f"{where}: {e}")
    return problems
