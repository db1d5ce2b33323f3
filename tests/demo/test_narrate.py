"""`obspack demo`: a missing server is one line and exit 1; while the stack waits and nothing changes, the
demo says what it waits for instead of staying silent."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from obspack.cli import app
from obspack.demo.narrate import _Printer

runner = CliRunner()


def test_demo_without_the_servers_is_one_line_naming_the_packages(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--workdir", str(tmp_path / "demo")], env={"PATH": str(tmp_path)})
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "error: prometheus and prometheus-alertmanager not found: apt-get install prometheus "
        "prometheus-alertmanager (or run scripts/install-test-tools.sh)"
    ]
    assert not (tmp_path / "demo").exists(), "nothing is started or written"


def test_a_quiet_wait_is_narrated_and_a_busy_one_is_not(capsys: pytest.CaptureFixture[str]) -> None:
    stack = SimpleNamespace(waiting=None, watcher=SimpleNamespace(started=time.monotonic()))
    printer = _Printer(stack, quiet_s=0.2, tick_s=0.02)  # type: ignore[arg-type]
    printer.start()
    try:
        time.sleep(0.4)  # quiet, but waiting for nothing: no line
        assert capsys.readouterr().out == ""
        stack.waiting = ("VLLMContainerOOMKilled on vllm-ram-0 to be inactive in prometheus", time.monotonic())
        for _ in range(4):  # a change every 0.1 s keeps it from speaking
            printer.line("change")
            time.sleep(0.1)
        assert capsys.readouterr().out == "change\n" * 4
        time.sleep(0.5)
    finally:
        printer.stop()
    lines = capsys.readouterr().out.splitlines()
    assert 1 <= len(lines) <= 3, lines
    assert all("... waiting" in line and "so far for VLLMContainerOOMKilled on vllm-ram-0" in line for line in lines)
