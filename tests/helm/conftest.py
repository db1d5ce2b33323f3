"""Run the real helm v3 binary on helm/obspack: render, lint, and parse what it prints."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.tools import ROOT, require_tool

CHART = ROOT / "helm" / "obspack"
FIXTURES = Path(__file__).parent / "fixtures"
EVERYTHING = FIXTURES / "values-everything.yaml"
RELEASE, NAMESPACE = "obspack", "monitoring"


@dataclass(frozen=True)
class Helm:
    binary: str
    env: dict[str, str]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.binary, *args], check=False, capture_output=True, text=True, env=self.env, timeout=60
        )

    def template(
        self, *values_files: Path, extra: tuple[str, ...] = (), chart: Path = CHART
    ) -> list[dict[str, Any]]:
        """Rendered documents; fails the test with helm's message when rendering fails."""
        args = ["template", RELEASE, str(chart), "--namespace", NAMESPACE]
        for f in values_files:
            args += ["--values", str(f)]
        result = self.run(*args, *extra)
        assert result.returncode == 0, result.stderr
        return [doc for doc in yaml.safe_load_all(result.stdout) if doc]

    def template_error(self, *extra: str) -> str:
        """helm's error for a render that must fail."""
        result = self.run("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *extra)
        assert result.returncode != 0, f"helm template {' '.join(extra)} should have failed"
        return result.stderr


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    home = tmp_path_factory.mktemp("helm-home")
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    return Helm(require_tool("helm"), env)


@pytest.fixture(scope="session")
def default_docs(helm: Helm) -> list[dict[str, Any]]:
    return helm.template()


@pytest.fixture(scope="session")
def everything_docs(helm: Helm) -> list[dict[str, Any]]:
    return helm.template(EVERYTHING)


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def merged_values(*overrides: dict[str, Any], chart: Path = CHART) -> dict[str, Any]:
    """The chart's values.yaml with value files laid over it, as helm coalesces them."""
    values = yaml.safe_load((chart / "values.yaml").read_text(encoding="utf-8"))
    for override in overrides:
        values = _merge(values, override)
    return values


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = (
            _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))
