"""Find the real external tools the tests need (promtool, prometheus, amtool, alertmanager, helm,
victoria-metrics, vmalert).

On a laptop a missing tool skips the test with the reason. In CI (CI=true) a missing tool fails the test:
`scripts/install-test-tools.sh` must have installed it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from obspack.demo import processes

ROOT = Path(__file__).resolve().parents[2]
_EXTRA_PATHS = {"helm": ROOT / ".tools" / "bin" / "helm", "prometheus-alertmanager": Path("/usr/bin/prometheus-alertmanager")}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def find_tool(name: str) -> str | None:
    found = processes.find_tool(name)
    if found:
        return found
    extra = _EXTRA_PATHS.get(name)
    return str(extra) if extra and extra.exists() else None


def require_tool(name: str) -> str:
    """Path of the tool; skip (laptop) or fail (CI) when it is missing."""
    path = find_tool(name)
    if path:
        return path
    reason = f"{name} not found: run scripts/install-test-tools.sh"
    if in_ci():
        pytest.fail(f"{reason} (CI=true requires it)")
    pytest.skip(reason)


def amtool_route(amtool: str, config: Path, receiver: str, labels: list[str]) -> None:
    """`amtool config routes test`: an alert with these labels (`name=value` each) reaches this receiver."""
    argv = [amtool, "config", "routes", "test", f"--config.file={config}", f"--verify.receivers={receiver}", *labels]
    run = subprocess.run(argv, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def promtool_record_test(
    tmp_path: Path, rules: list[dict[str, str]], input_series: list[dict[str, str]], checks: list[dict[str, object]]
) -> None:
    """Run `promtool test rules` on recording `rules` (one group) with `input_series` at a 1m interval, and
    assert that every `promql_expr_test` in `checks` holds."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": "t", "rules": rules}]}))
    promtool_query_test(tmp_path, input_series, checks, rule_files=("rules.yaml",))


def promtool_query_test(
    tmp_path: Path,
    input_series: list[dict[str, str]],
    checks: list[dict[str, Any]],
    interval: str = "1m",
    rule_files: tuple[str, ...] = (),
) -> None:
    """Run `promtool test rules` on the `promql_expr_test` `checks` over `input_series` sampled every
    `interval` (no rule files: the checks are queries as a dashboard sends them), and assert that each holds."""
    test = {
        "rule_files": list(rule_files),
        "evaluation_interval": interval,
        "tests": [{"interval": interval, "input_series": input_series, "promql_expr_test": checks}],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False, width=10_000), encoding="utf-8")
    done = subprocess.run([require_tool("promtool"), "test", "rules", "test.yaml"], capture_output=True, text=True,
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
