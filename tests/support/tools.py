"""Find the real external tools the tests need (promtool, prometheus, amtool, alertmanager, helm,
victoria-metrics, vmalert).

On a laptop a missing tool skips the test with the reason. In CI (CI=true) a missing tool fails the test:
`scripts/install-test-tools.sh` must have installed it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

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
