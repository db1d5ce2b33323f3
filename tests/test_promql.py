"""obspack.promql.walk: promql_parser.walk's nodes, order and stops, in Python."""

from __future__ import annotations

import promql_parser
import pytest

from obspack.pack.walk import expressions
from obspack.promql import walk, without_matchers_on
from tests.support.packs import CONFIGS, pack

CRAFTED = [
    "sum by (a) (rate(x[5m])) * on (b) group_left (c) max(y) + 1",
    "-max_over_time((z offset 5m)[10m:1m]) > bool 0",
    'topk(3, v) or label_replace(u, "a", "b", "c", "d")',
    'count_values("value", x) unless absent(y{a=~"b|c"})',
    "quantile_over_time(0.9, x[1h] @ 100) / scalar(sum(y))",
    "histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m])))",
    "vector(1) + time() - 2 ^ 3",
    '"a string"',
]


def _trace(walker: object, expr: str, stop_at: int | None = None) -> list[str]:
    """The visits of a walk over expr, as `pre Type text` and `post Type text`; the `stop_at`-th visit
    (pre or post) returns False."""
    seen: list[str] = []

    def visit(kind: str) -> object:
        def record(node: promql_parser.Expr) -> bool:
            seen.append(f"{kind} {type(node).__name__} {node}")
            return len(seen) != stop_at

        return record

    done = walker(promql_parser.parse(expr), visit("pre"), visit("post"))  # type: ignore[operator]
    return [*seen, f"returned {done}"]


def _all_expressions() -> list[str]:
    return CRAFTED + sorted({expr for config in CONFIGS for _, expr in expressions(pack(config))})


def test_the_walk_visits_what_promql_parsers_walk_visits_in_its_order() -> None:
    """Every rule and dashboard query of the packs, and the node kinds they may lack."""
    exprs = _all_expressions()
    assert len(exprs) > 300
    for expr in exprs:
        assert _trace(walk, expr) == _trace(promql_parser.walk, expr), expr


@pytest.mark.parametrize("stop_at", [1, 2, 5, 9])
def test_false_stops_the_walk_as_it_stops_promql_parsers(stop_at: int) -> None:
    for expr in CRAFTED:
        assert _trace(walk, expr, stop_at) == _trace(promql_parser.walk, expr, stop_at), expr


def test_callbacks_are_optional() -> None:
    visited: list[str] = []
    assert walk(promql_parser.parse("sum(rate(x[5m]))"), None, lambda n: visited.append(type(n).__name__))
    assert visited == ["VectorSelector", "MatrixSelector", "Call", "AggregateExpr"]


@pytest.mark.parametrize(
    ("matchers", "left"),
    [
        ('namespace=~"llm-.*", job="ksm"', 'job="ksm"'),
        (' namespace =~ "a|b" , k8s_cluster=~"prod-.*"', 'k8s_cluster=~"prod-.*"'),
        ('job="a,namespace=b", namespace!="x"', 'job="a,namespace=b"'),  # a comma inside a string stays
        ('namespace_x="1", job="a\\"b"', 'namespace_x="1", job="a\\"b"'),  # another label; an escape kept
        ('namespace="a"', ""),
        ("", ""),
    ],
)
def test_matchers_on_a_label_are_left_out_and_the_others_kept_as_written(matchers: str, left: str) -> None:
    assert without_matchers_on(matchers, "namespace") == left
