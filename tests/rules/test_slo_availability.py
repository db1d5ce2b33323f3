"""The availability SLO on a healthy fleet, on promtool.

vLLM's API server creates a status's `http_requests_total` series at that status's first request: a healthy
pod has no 5xx series at all, and a pod's first failures arrive as a new series whose first sample already
counts them. The records must say 0 failures for the healthy pod (not nothing, which would drop the model out
of the SLI, the budget and the burn), and must count a new series' first failures exactly as they count the
same failures on a series that was written as 0 before (the two ways a client may expose a counter).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from obspack import conventions as c
from obspack.render.files import RECORDING_FILE
from tests.support.packs import files
from tests.support.tools import require_tool

ERRORS = c.slo_rate("errors", "5m")
EVENTS = c.slo_rate("events", "5m")
FIRST = 10  # the step (minutes) of the first failures
PER_STEP = 5  # failures per minute from then on
STEPS = 20


def _pod(cluster: str, five_xx: str | None) -> list[dict[str, str]]:
    where = f'cluster="{cluster}", namespace="llm", pod="{cluster}-0"'
    http = f'http_requests_total{{{where}, handler="/v1/completions", method="POST", status='
    series = [
        {"series": f'vllm:num_requests_running{{{where}, model_name="m", engine="0"}}', "values": f"3x{STEPS}"},
        {"series": f'{http}"2xx"}}', "values": f"0+100x{STEPS}"},
    ]
    if five_xx is not None:
        series.append({"series": f'{http}"5xx"}}', "values": five_xx})
    return series


WAYS = {
    # the same failures, exposed two ways: a series written as 0 before them, and one created at the first
    "zero-first": f"0x{FIRST - 1} {PER_STEP}+{PER_STEP}x{STEPS - FIRST}",
    "created-at-first": f"_x{FIRST} {PER_STEP}+{PER_STEP}x{STEPS - FIRST}",
}


def _expected(step: int) -> int:
    """Failures in the 5m window at `step`: those since step FIRST - 1, at most 5 steps of them."""
    return PER_STEP * max(0, min(step - FIRST + 1, 5))


def _in_window(record: str) -> str:
    """The record's events in its 5m window, rounded (promtool compares floats exactly)."""
    return f'round({record}{{slo="availability"}} * 300, 0.001)'


def _sample(cluster: str, value: float) -> dict[str, object]:
    return {"labels": f'{{cluster="{cluster}", model_name="m", namespace="llm", slo="availability"}}', "value": value}


def _test_file(rules: Path) -> dict[str, object]:
    series = [s for cluster, values in WAYS.items() for s in _pod(cluster, values)] + _pod("healthy", None)
    checks = []
    for step in (1, FIRST - 1, FIRST, FIRST + 1, FIRST + 3, FIRST + 4, FIRST + 5, STEPS):
        checks.append(
            {
                "expr": _in_window(ERRORS),
                "eval_time": f"{step}m",
                "exp_samples": [_sample("created-at-first", _expected(step)), _sample("healthy", 0),
                                _sample("zero-first", _expected(step))],  # fmt: skip
            }
        )
    # The events count the same requests both ways, and the healthy pod's too.
    checks.append(
        {
            "expr": _in_window(EVENTS),
            "eval_time": f"{FIRST}m",
            "exp_samples": [_sample(cl, 500 + _expected(FIRST) * (cl != "healthy"))
                            for cl in ("created-at-first", "healthy", "zero-first")],  # fmt: skip
        }
    )
    # Why: rate() takes a new series' first sample as its start, so on its own it sees nothing at the first
    # failures of the created-at-first pod (and an alert reading it would wait a scrape longer).
    checks.append(
        {
            "expr": 'rate(http_requests_total{cluster="created-at-first", status="5xx"}[5m])',
            "eval_time": f"{FIRST}m",
            "exp_samples": [],
        }
    )
    return {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [{"name": "availability: healthy pods and new 5xx series", "interval": "1m",
                   "input_series": series, "promql_expr_test": checks}],  # fmt: skip
    }


def _promtool(tmp_path: Path, rules_text: str) -> subprocess.CompletedProcess[str]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(rules_text)
    test = tmp_path / "availability_test.yaml"
    test.write_text(yaml.safe_dump(_test_file(rules), sort_keys=False))
    return subprocess.run([require_tool("promtool"), "test", "rules", str(test)], capture_output=True, text=True)


def test_a_healthy_pod_fails_0_and_a_new_5xx_series_counts_from_its_first_sample(tmp_path: Path) -> None:
    done = _promtool(tmp_path, files("defaults")[RECORDING_FILE])
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_checks_fail_without_the_fill_or_without_the_first_samples(tmp_path: Path) -> None:
    """The same checks on the rules with one part taken out: no 0 for the healthy pod, or rate() alone."""
    rules = files("defaults")[RECORDING_FILE]
    fill = "\n      or\n      0 * sum by"
    first = ' offset 5m) / 300\n'
    assert rules.count(fill) == 1 and rules.count(first) == 3
    for broken, missing in (
        (rules.replace(fill, "\n      and\n      0 * sum by"), 'cluster="healthy"'),
        (rules.replace(first, " offset 5m) / 300 > Inf\n"), 'cluster="created-at-first"'),
    ):
        done = _promtool(tmp_path, broken)
        assert done.returncode != 0, done.stdout
        assert missing in done.stderr
