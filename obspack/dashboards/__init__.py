"""Grafana dashboards built with grafanalib. `all_dashboards(cfg)` returns (file name, JSON model) pairs.

Each topic module builds one dashboard from the helpers in `panels`, the queries in `queries` and the
variables in `variables`; `defaults` stamps what they share (uid, tags, refresh, links, panel ids).
"""

# ruff: noqa: E402 - grafanalib is imported through attrs_bytecode first, then as usual

from __future__ import annotations

from obspack.attrs_bytecode import import_module

import_module("grafanalib.core")  # its classes' generated methods compiled once per install, not per process

from collections.abc import Callable

from grafanalib.core import Dashboard

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import (
    cost,
    disaggregation,
    fleet,
    gateway,
    gpu_by_workload,
    kv_prefix_cache,
    pod_memory_planes,
    slos,
)
from obspack.dashboards.defaults import shown, to_model

BUILDERS: dict[str, Callable[[ObspackConfig], Dashboard]] = {
    fleet.NAME: fleet.dashboard_for,
    pod_memory_planes.NAME: pod_memory_planes.dashboard_for,
    kv_prefix_cache.NAME: kv_prefix_cache.dashboard_for,
    gpu_by_workload.NAME: gpu_by_workload.dashboard_for,
    slos.NAME: slos.dashboard_for,
    cost.NAME: cost.dashboard_for,
    disaggregation.NAME: disaggregation.dashboard_for,
    gateway.NAME: gateway.dashboard_for,
}


def all_dashboards(cfg: ObspackConfig) -> list[tuple[str, dict[str, object]]]:
    missing = set(c.DASHBOARDS) ^ set(BUILDERS)
    if missing:
        raise ValueError(f"dashboards and conventions.DASHBOARDS disagree on: {sorted(missing)}")
    return [(name, to_model(BUILDERS[name](cfg))) for name in shown(cfg)]
