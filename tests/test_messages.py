"""Messages users read, by their exact text: a doctor pointed at the API's own path, `validate --tests`, a
config FIFO nobody writes, a body that trickles past --timeout (the config errors are in
test_config_errors.py, the help in test_cli.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from obspack.cli import app
from obspack.render.promtool import run_unit_tests
from tests.support.prometheus import running_prometheus
from tests.support.tools import require_tool

runner = CliRunner()


@pytest.mark.tool
@pytest.mark.parametrize("suffix", ["/api/v1", "/api/v1/", "/api/v1/query"])
def test_doctor_on_the_apis_own_path_says_to_drop_it(tmp_path: Path, suffix: str) -> None:
    with running_prometheus(tmp_path / "data") as prom:
        result = runner.invoke(app, ["doctor", "-p", prom.url + suffix])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"error: {prom.url}{suffix} did not answer a query: query: HTTP 404 404 page not found; give --prometheus "
        f"without {suffix.rstrip('/')}, which obspack adds itself: {prom.url}"
    )


@pytest.mark.tool
def test_doctor_on_a_wrong_path_prefix_names_the_prefixes(tmp_path: Path) -> None:
    with running_prometheus(tmp_path / "data") as prom:
        result = runner.invoke(app, ["doctor", "-p", prom.url + "/prometheus"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].endswith(
        "HTTP 404 404 page not found; check the URL's path prefix (none for Prometheus and Thanos, /prometheus "
        "for Mimir, /select/<tenant>/prometheus for VictoriaMetrics cluster)"
    )


@pytest.mark.tool
def test_validate_tests_runs_the_shipped_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_tool("promtool")
    config = tmp_path / "obspack.yaml"
    config.write_text("slos: {enabled: false}\n")  # the SLO file alone takes three times the others
    result = runner.invoke(app, ["validate", "--config", str(config), "--tests"])
    assert result.exit_code == 0, result.output
    assert re.fullmatch(
        r"config OK; \d+ PromQL expressions parsed, promtool check rules --lint-fatal passed; 4 shipped test files "
        r"passed \(promtool test rules, \d+s\)\n",
        result.stdout,
    )
    monkeypatch.setenv("PATH", str(tmp_path))  # no promtool
    missing = runner.invoke(app, ["validate", "--config", str(config), "--tests"])
    assert missing.exit_code == 1
    assert missing.stderr == "error: --tests needs promtool on PATH (Debian: apt-get install prometheus)\n"


@pytest.mark.tool
def test_a_failing_shipped_test_is_reported_with_its_file() -> None:
    promtool = require_tool("promtool")
    rules = "groups:\n- name: g\n  rules:\n  - alert: Always\n    expr: vector(1)\n"
    test = (
        "rule_files: [../prometheus/alerts.yaml]\ntests:\n- interval: 1m\n  input_series: []\n"
        "  alert_rule_test:\n  - eval_time: 1m\n    alertname: Always\n    exp_alerts: []\n"
    )
    ran, problems = run_unit_tests(promtool, {"prometheus/alerts.yaml": rules, "tests/always_test.yaml": test})
    assert ran == 1
    assert problems[0] == "promtool test rules tests/always_test.yaml: FAILED:"
    assert any("alertname: Always" in line for line in problems)
