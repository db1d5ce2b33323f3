"""Messages users read, by their exact text: a doctor pointed at the API's own path, `validate --tests`, a
config FIFO nobody writes, a body that trickles past --timeout (the config errors are in
test_config_errors.py, the help in test_cli.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from obspack import yamlsource
from obspack.cli import app
from obspack.config import ObspackConfig, load_config
from obspack.errors import ConfigError
from obspack.render.promtool import run_unit_tests
from tests.doctor.fakes import Answer, serve
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
    # Two topics' alerts (every shipped file evaluates every rule group: the whole set takes half a minute)
    kept = {"VLLMHostMemoryNearLimit", "VLLMContainerOOMKilled", "VLLMContainerRestarted", "VLLMGPUMemoryNearFull",
            "VLLMKVCacheFragmentationHigh", "VLLMCUDAAllocatorFragmentationHigh", "ObspackExporterTargetDown"}
    off = "".join(f"  {name}: {{enabled: false}}\n" for name in type(ObspackConfig().alerts).model_fields if name not in kept)
    config.write_text(f"slos: {{enabled: false}}\nalerts:\n{off}")
    result = runner.invoke(app, ["validate", "--config", str(config), "--tests"])
    assert result.exit_code == 0, result.output
    assert re.fullmatch(
        r"config OK; \d+ PromQL expressions parsed, promtool check rules --lint-fatal passed; 2 shipped test files "
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


# ---------------------------------------------------------------------------------------------------------
# --config on a FIFO or pipe: bounded, and `<(...)` keeps working


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "config.fifo"
    os.mkfifo(path)
    return path


def test_a_fifo_nobody_writes_is_refused_within_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlsource, "WAIT_S", 0.5)
    fifo = _fifo(tmp_path)
    started = time.monotonic()
    with pytest.raises(ConfigError) as err:
        load_config(fifo)
    assert time.monotonic() - started < 3
    assert err.value.problems == [
        f"{fifo}: cannot read the config file (nothing was written to it within 0.5s: a FIFO or pipe that nobody writes)"
    ]


def test_a_writer_that_never_finishes_is_refused_within_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlsource, "WAIT_S", 0.5)
    read, write = os.pipe()
    os.write(write, b"cluster_label: k8s_cluster\n")
    try:
        with pytest.raises(ConfigError) as err:
            load_config(Path(f"/proc/self/fd/{read}"))
    finally:
        os.close(read)
        os.close(write)
    assert err.value.problems == [
        f"/proc/self/fd/{read}: cannot read the config file (its writer sent 27 bytes and did not finish within 0.5s)"
    ]


def test_a_fifo_written_a_moment_later_is_read(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path)

    def writer() -> None:
        time.sleep(0.3)
        fifo.write_text("cluster_label: k8s_cluster\n")

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert load_config(fifo).cluster_label == "k8s_cluster"
    finally:
        thread.join()


def test_process_substitution_works_as_a_config(tmp_path: Path) -> None:
    command = shutil.which("obspack") or f"{sys.executable} -m obspack"
    script = f"{command} validate --config <(printf 'cluster_label: k8s_cluster\\n')"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("config OK;")


# ---------------------------------------------------------------------------------------------------------
# Answers that trickle past --timeout, or come empty


TRICKLE = Answer(raw=lambda: [b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"] + [b" "] * 200, pace_s=0.02)


@pytest.mark.parametrize("command", ["doctor", "rightsize"])
def test_a_body_that_trickles_past_timeout_names_the_time_limit(command: str) -> None:
    with serve(lambda r: TRICKLE) as fake:
        result = runner.invoke(app, [command, "-p", fake.url, "--timeout", "1s"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"error: {fake.url} did not answer a query: query: no whole answer within 1s (--timeout)"
    )


def test_an_empty_answer_is_called_empty() -> None:
    with serve(lambda r: Answer(200, b"", "application/json")) as fake:
        result = runner.invoke(app, ["doctor", "-p", fake.url])
    assert result.exit_code == 2
    assert f"error: {fake.url} does not answer like the Prometheus API (query: an empty answer, HTTP 200); " in result.stderr
