"""PromQL text tools, pure and independent of the pack: a dashboard query as plain PromQL
(`grafana_to_promql`), the selectors and metric names of an expression, whether fixed labels may satisfy
matchers, and string literals kept as written through promql_parser (which prints them unescaped).
Walking a Pack's expressions is the pack stage's (obspack.pack.walk)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping

import promql_parser

# Grafana variables that stand for durations or label values inside dashboard queries.
_GRAFANA_DURATIONS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h", "${__range}": "1h"}
_GRAFANA_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}?")


def grafana_to_promql(expr: str, values: Mapping[str, str] | None = None) -> str:
    """Replace Grafana's variables so a dashboard query can go through a PromQL parser.

    `values` maps a template variable's name to the text Grafana would put in its place; variables not
    in it become `x`."""
    for variable, value in _GRAFANA_DURATIONS.items():
        expr = expr.replace(variable, value)
    chosen = values or {}
    return _GRAFANA_VARIABLE.sub(lambda m: chosen.get(m.group(1), "x"), expr)


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


def without_matchers_on(matchers: str, label: str) -> str:
    """Label matchers (`a="b", c=~"d"`, no braces) without those on `label`."""
    hidden, restore = hide_strings(matchers)
    on_label = re.compile(rf"\s*{re.escape(label)}\s*[=!]")
    return restore(", ".join(m.strip() for m in hidden.split(",") if m.strip() and not on_label.match(m)))


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


# The operands of each kind of node, in the order promql_parser.walk visits them (a Call's are its args).
_OPERANDS: dict[type, tuple[str, ...]] = {
    promql_parser.AggregateExpr: ("param", "expr"),
    promql_parser.BinaryExpr: ("lhs", "rhs"),
    promql_parser.UnaryExpr: ("expr",),
    promql_parser.ParenExpr: ("expr",),
    promql_parser.SubqueryExpr: ("expr",),
    promql_parser.MatrixSelector: ("vector_selector",),
}
Visit = Callable[[promql_parser.Expr], object]


def operands(node: promql_parser.Expr) -> list[promql_parser.Expr]:
    """A node's operands (children), left to right."""
    if isinstance(node, promql_parser.Call):
        return [a for a in node.args if isinstance(a, promql_parser.Expr)]
    found = (getattr(node, name) for name in _OPERANDS.get(type(node), ()))
    return [child for child in found if isinstance(child, promql_parser.Expr)]


def walk(node: promql_parser.Expr, pre_visit: Visit | None = None, post_visit: Visit | None = None) -> bool:
    """promql_parser.walk in Python: depth first, `pre_visit` before a node's operands and `post_visit`
    after them; False from either stops the walk. The same nodes in the same order
    (tests/test_promql.py), about 50 times faster: promql_parser's walk converts every node it visits
    from Rust again, while a parsed expression's attributes are already Python objects."""
    if pre_visit is not None and pre_visit(node) is False:
        return False
    for child in operands(node):
        if not walk(child, pre_visit, post_visit):
            return False
    return not (post_visit is not None and post_visit(node) is False)


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

    walk(promql_parser.parse(grafana_to_promql(expr)), visit)
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
