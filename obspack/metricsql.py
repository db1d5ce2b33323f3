"""PromQL to the MetricsQL of VictoriaMetrics 1.79 (vmalert), as rewrites of the parsed expression.

Every rule goes through the same two rewrites, so rules added later get them without code changes:

- Functions whose MetricsQL namesake counts differently are renamed to the Prometheus-compatible form:
  `increase`, `changes` and `delta` there use the sample before the window, and `increase` counts a
  new counter's first small value as growth from 0. `increase_prometheus`, `changes_prometheus` and
  `delta_prometheus` (all in 1.79) look only inside the window, as Prometheus does.
- Functions that keep `__name__` on VictoriaMetrics but drop it on Prometheus (measured on both engines,
  tests/test_metricsql.py) get `label_del(..., "__name__")` around them wherever their result reaches the
  rule's output, i.e. no aggregation, arithmetic or other name-dropping function lies above them.

What cannot be rewritten is documented in docs/engines.md (`rate` extrapolation, left-open windows, NaN).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import promql_parser as p

from obspack.promql import hide_strings, token, walk

# MetricsQL's Prometheus-compatible counterparts (VictoriaMetrics 1.79 has these three; rate_prometheus
# came in 1.120).
RENAMED = {"increase": "increase_prometheus", "changes": "changes_prometheus", "delta": "delta_prometheus"}

# Functions that keep the metric name on VictoriaMetrics 1.79 and drop it on Prometheus 2.42.
KEEPS_NAME_ONLY_ON_VM = frozenset({
    "avg_over_time", "min_over_time", "max_over_time", "quantile_over_time", "predict_linear", "holt_winters",
    "ceil", "floor", "round", "clamp", "clamp_min", "clamp_max",
})
# Functions that keep the metric name on both engines: they pass a name from below up to the output.
KEEPS_NAME_ON_BOTH = frozenset({"last_over_time", "label_replace", "label_join", "sort", "sort_desc"})
# Aggregations that return their input series as they are, name included.
SELECTING_AGGREGATIONS = frozenset({"topk", "bottomk"})
COMPARISONS = frozenset({"==", "!=", ">", "<", ">=", "<="})
SET_OPERATORS = frozenset({"and", "or", "unless"})

_MATRIX, _VECTOR, _STRING = p.ValueType.Matrix, p.ValueType.Vector, p.ValueType.String
_EXTRA_FUNCTIONS = [
    p.Function(new, [_MATRIX], _VECTOR) for new in RENAMED.values()
] + [p.Function("label_del", [_VECTOR, _STRING], _VECTOR, variadic=1)]


@contextmanager
def _metricsql_functions() -> Iterator[None]:
    """Let the PromQL parser read the MetricsQL functions the rewrites produce, only while rewriting:
    outside, a MetricsQL name in a Prometheus rule stays a parse error. (obspack registers no other
    extra functions, so clearing them all is safe.)"""
    p.register_extra_functions(_EXTRA_FUNCTIONS)
    try:
        yield
    finally:
        p.clear_extra_functions()


def _op(node: p.Expr) -> str:
    return token(node.op)  # type: ignore[attr-defined]


def _drops_name(node: p.Expr) -> bool:
    """Whether a node's result has no metric name, whatever its operands had (on VictoriaMetrics)."""
    if isinstance(node, p.AggregateExpr):
        return _op(node) not in SELECTING_AGGREGATIONS
    if isinstance(node, p.BinaryExpr):
        keeps = _op(node) in SET_OPERATORS or (_op(node) in COMPARISONS and not (node.modifier and node.modifier.return_bool))
        return not keeps
    if isinstance(node, p.Call):
        # A function that keeps the name only on VictoriaMetrics is itself wrapped where it is exposed,
        # so the names below it never reach the output either.
        return node.func.name not in KEEPS_NAME_ON_BOTH
    return isinstance(node, p.UnaryExpr)


def _call(name: str, args: list[object]) -> p.Expr:
    return p.parse(f"{name}({', '.join(str(a) for a in args)})")


_RENAMED_CALL = re.compile(r"(?<![\w:])(" + "|".join(RENAMED) + r")(\s*\()")


def _in_place(expr: str, rewritten: p.Expr) -> str | None:
    """The renames done on the text itself, which keeps the author's layout; None unless the result
    parses to exactly the rewritten expression (a name inside a string, or a wrap, rules it out)."""
    text = _RENAMED_CALL.sub(lambda m: RENAMED[m.group(1)] + m.group(2), expr)
    try:
        same = str(p.parse(text)) == str(rewritten)
    except ValueError:
        return None
    return text if same else None


def _changes(node: p.Expr, above: list[bool]) -> bool:
    """Whether a rewrite replaces this node, given whether each node above it drops the metric name."""
    if not isinstance(node, p.Call):
        return False
    name = node.func.name
    return name in RENAMED or (name in KEEPS_NAME_ONLY_ON_VM and not any(above))


def rewrite(expr: str) -> str:
    """The expression as vmalert 1.79 should run it; the original text when nothing needs to change."""
    ancestors: list[bool] = []  # per open node: does it drop the name of what lies below it?

    def enter(node: p.Expr) -> None:
        ancestors.append(_drops_name(node))

    def unchanged(node: p.Expr) -> bool:
        ancestors.pop()
        return not _changes(node, ancestors)  # False stops the walk: one change is enough to know

    def leave(node: p.Expr) -> p.Expr | None:
        ancestors.pop()
        if not _changes(node, ancestors):
            return None
        if node.func.name in RENAMED:  # type: ignore[attr-defined]
            return _call(RENAMED[node.func.name], node.args)  # type: ignore[attr-defined]
        return p.parse(f'label_del({node}, "__name__")')

    hidden, restore = hide_strings(expr)
    original = p.parse(hidden)
    # Most expressions need no change: a walk in Python finds that out, and promql_parser's transform,
    # which is most of a rewrite's cost, runs only where something changes.
    if walk(original, enter, unchanged):
        return expr
    ancestors.clear()
    with _metricsql_functions():
        rewritten = p.transform(original, enter, leave)
        if str(rewritten) == str(original):
            return expr
        return restore(_in_place(hidden, rewritten) or rewritten.prettify())
