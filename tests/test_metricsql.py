"""PromQL to MetricsQL: the rewrites on expressions, and the engine facts they rest on, measured on
Debian's VictoriaMetrics 1.79 and promtool 2.42."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import promql_parser
import pytest
import yaml

from obspack.metricsql import KEEPS_NAME_ON_BOTH, KEEPS_NAME_ONLY_ON_VM, RENAMED, rewrite
from tests.support.tools import require_tool
from tests.support.victoria import VictoriaMetrics

REWRITES = {
    "a restart in the window": (
        "increase(kube_pod_container_status_restarts_total[15m]) > 0",
        "increase_prometheus(kube_pod_container_status_restarts_total[15m]) > 0",
    ),
    "changes and delta, under an aggregation": (
        "sum by (a) (changes(x[5m])) or delta(y[10m]) < 0",
        "sum by (a) (changes_prometheus(x[5m])) or delta_prometheus(y[10m]) < 0",
    ),
    "a name-keeping function at the output": (
        "max_over_time(x[5m]) > 0.3",
        'label_del(max_over_time(x[5m]), "__name__") > 0.3',
    ),
    "through topk, which keeps its input series": (
        "topk by (a) (1, avg_over_time(x[5m]))",
        'topk by (a) (1, label_del(avg_over_time(x[5m]), "__name__"))',
    ),
    "through label_replace, which keeps names on both engines": (
        'label_replace(clamp(x, 0, 1), "b", "$1", "a", "(.*)")',
        'label_replace(label_del(clamp(x, 0, 1), "__name__"), "b", "$1", "a", "(.*)")',
    ),
    "the outermost of two name-keeping functions only": (
        "clamp_max(max_over_time(x[5m]), 1)",
        'label_del(clamp_max(max_over_time(x[5m]), 1), "__name__")',
    ),
    "a space before the parenthesis": ("increase (x[5m])", "increase_prometheus (x[5m])"),
    "a comparison keeps the vector side's name, scalar first": (
        "1 < round(x)",
        '1 < label_del(round(x), "__name__")',
    ),
}

UNCHANGED = {
    "under an aggregation": "group by (a) (max_over_time(up[1h]) == 1)",
    "under arithmetic": "max_over_time(x[5m]) / 2",
    "under a bool comparison": "min_over_time(x[5m]) > bool 0",
    "rate has no Prometheus form in 1.79": "sum by (a) (rate(x[5m]))",
    "count_over_time drops the name on both": "count_over_time(x[5m]) < 2",
    "layout kept when nothing changes": "sum by (a) (\n  rate(x[5m])\n)",
    "a function's name only inside a string or a metric's name": 'vllm:max_over_time_x{reason="increase(1)"} > 0',
}


@pytest.mark.parametrize("case", sorted(REWRITES))
def test_rewrite(case: str) -> None:
    promql, metricsql = REWRITES[case]
    assert rewrite(promql) == metricsql


@pytest.mark.parametrize("case", sorted(UNCHANGED))
def test_unchanged(case: str) -> None:
    assert rewrite(UNCHANGED[case]) == UNCHANGED[case]


def test_renames_keep_the_authors_layout() -> None:
    promql = "sum by (a) (\n  increase(x[5m])\n)\nunless\nchanges(y[5m]) > 0"
    assert rewrite(promql) == "sum by (a) (\n  increase_prometheus(x[5m])\n)\nunless\nchanges_prometheus(y[5m]) > 0"


def test_a_function_name_inside_a_string_is_not_renamed() -> None:
    promql = 'increase(x{reason="increase(1)"}[5m])'
    assert rewrite(promql) == 'increase_prometheus(x{reason="increase(1)"}[5m])'



@pytest.mark.parametrize("promql", ["sum(", "increase(x)", "rate(x[5m]) +"])
def test_an_expression_that_does_not_parse_is_an_error(promql: str) -> None:
    """With or without a function to rewrite, the expression is parsed: a broken one is not passed on."""
    with pytest.raises(ValueError):
        rewrite(promql)


def test_metricsql_names_stay_parse_errors_for_promql() -> None:
    """The parser reads MetricsQL names only while rewriting: a Prometheus rule that used one by
    mistake still fails obspack's own parse."""
    rewrite("increase(x[5m])")
    with pytest.raises(ValueError):
        promql_parser.parse("increase_prometheus(x[5m])")


# ---------------------------------------------------------------------------------------------------------
# The facts behind the rewrites, on the real engines

FUNCTIONS = {
    **{f: f"{f}(g[5m])" for f in (
        "avg_over_time", "min_over_time", "max_over_time", "sum_over_time", "count_over_time", "last_over_time",
        "present_over_time", "stddev_over_time", "stdvar_over_time", "changes", "resets", "delta", "idelta",
        "deriv", "rate", "irate", "increase")},
    "quantile_over_time": "quantile_over_time(0.5, g[5m])",
    "predict_linear": "predict_linear(g[5m], 60)",
    "holt_winters": "holt_winters(g[5m], 0.5, 0.5)",
    **{f: f"{f}(g)" for f in ("abs", "ceil", "floor", "round", "exp", "ln", "log2", "sqrt", "sgn", "timestamp")},
    "clamp": "clamp(g, 0, 5)", "clamp_min": "clamp_min(g, 0)", "clamp_max": "clamp_max(g, 50)",
    "label_replace": 'label_replace(g, "x", "$1", "k", "(.*)")', "label_join": 'label_join(g, "x", "-", "k")',
    "sort": "sort(g)", "sort_desc": "sort_desc(g)",
}
START = 1_704_067_200
GAUGE = ('g{k="a"}', "1+1x10")  # one sample a minute, rising


@pytest.fixture(scope="module")
def victoria(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VictoriaMetrics]:
    vm = VictoriaMetrics(require_tool("victoria-metrics"), tmp_path_factory.mktemp("victoria-metrics"))
    vm.load([GAUGE], START, 60)
    yield vm
    vm.stop()


def test_functions_that_keep_the_metric_name_on_victoriametrics(victoria: VictoriaMetrics) -> None:
    keeps = {f for f, expr in FUNCTIONS.items() if "__name__" in victoria.query(expr, START + 600)[0][0]}
    assert keeps == (KEEPS_NAME_ONLY_ON_VM | KEEPS_NAME_ON_BOTH) & set(FUNCTIONS)


def test_functions_that_keep_the_metric_name_on_prometheus(tmp_path: Path) -> None:
    """promtool states each expected series; a function that keeps the name fails the unnamed form."""
    cases = [
        {"expr": f"count({expr}) by (__name__)", "eval_time": "10m",
         "exp_samples": [{"labels": "{__name__=\"g\"}" if name in KEEPS_NAME_ON_BOTH else "{}", "value": 1}]}
        for name, expr in FUNCTIONS.items()
    ]
    test = {"tests": [{"interval": "1m", "input_series": [{"series": GAUGE[0], "values": GAUGE[1]}],
                       "promql_expr_test": cases}]}
    (tmp_path / "names_test.yaml").write_text(yaml.safe_dump(test))
    done = subprocess.run([require_tool("promtool"), "test", "rules", "names_test.yaml"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_prometheus_forms_count_only_inside_the_window(victoria: VictoriaMetrics) -> None:
    """A counter first seen at 5: MetricsQL's increase counts 5 of growth from 0, Prometheus and the
    `_prometheus` forms see none; on a steady counter the forms agree with Prometheus' raw difference."""
    victoria.load([('c_total{k="new"}', "5x10")], START + 3600, 60)
    at = START + 3600 + 120
    assert victoria.query('increase(c_total{k="new"}[5m])', at)[0][1] == 5
    for name in RENAMED.values():
        assert victoria.query(f'{name}(c_total{{k="new"}}[5m])', at)[0][1] == 0, name
