"""Grafana dashboards built with grafanalib. `all_dashboards(cfg)` returns (file name, JSON model) pairs."""

from __future__ import annotations

from obspack import conventions as c
from obspack.config import ObspackConfig


def all_dashboards(cfg: ObspackConfig) -> list[tuple[str, dict[str, object]]]:
    # Placeholder until the dashboards land: one empty dashboard per name so links resolve.
    return [
        (name, {"title": title, "uid": c.dashboard_uid(name), "panels": [], "schemaVersion": 39})
        for name, title in c.DASHBOARDS.items()
    ]
