"""Fixtures of the end-to-end tests: the real binaries (skipped on a laptop without them, required in CI)."""

from __future__ import annotations

import pytest

from obspack.demo.stack import Tools
from tests.support.tools import require_tool


@pytest.fixture(scope="session")
def e2e_tools() -> Tools:
    """Prometheus and Alertmanager from Debian's packages."""
    return Tools(prometheus=require_tool("prometheus"), alertmanager=require_tool("prometheus-alertmanager"))


@pytest.fixture(scope="session")
def amtool() -> str:
    return require_tool("amtool")
