"""promtool unit tests of the alerts, built from the config's own thresholds (placeholder)."""

from __future__ import annotations

from obspack.config import ObspackConfig


def rule_tests(cfg: ObspackConfig) -> dict[str, dict[str, object]]:
    return {}
