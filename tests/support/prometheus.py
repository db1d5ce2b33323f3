"""The demo's Prometheus kit (obspack/demo/prometheus.py, obspack/demo/processes.py) for the tests: the same
client, server and backfill, with binaries from `require_tool`, so a missing one skips the test on a
laptop and fails it in CI.

    data = tmp_path / "data"
    backfill_openmetrics(fleet_file, data)
    backfill_rules(data, groups, start=..., end=...)   # recording rules, dependencies first
    with running_prometheus(data) as prom:
        prom.query_range("up", start, end, step=60)
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from obspack.demo import prometheus as kit
from obspack.demo.prometheus import Prometheus
from tests.support.tools import require_tool


def running_prometheus(
    data_dir: Path, *, rule_files: Sequence[Path] = (), evaluation_interval: str = "15s"
) -> AbstractContextManager[Prometheus]:
    """Serve `data_dir` on a free 127.0.0.1 port until the block ends; no scrape targets."""
    return kit.running_prometheus(
        data_dir, rule_files=rule_files, evaluation_interval=evaluation_interval, binary=require_tool("prometheus")
    )


def backfill_openmetrics(source: Path, data_dir: Path, max_block: str = "2h") -> None:
    kit.backfill_openmetrics(source, data_dir, max_block, promtool=require_tool("promtool"))


def backfill_rules(
    data_dir: Path, groups: Sequence[dict[str, Any]], *, start: int, end: int, eval_interval: str = "30s"
) -> int:
    return kit.backfill_rules(
        data_dir,
        groups,
        start=start,
        end=end,
        eval_interval=eval_interval,
        promtool=require_tool("promtool"),
        prometheus=require_tool("prometheus"),
    )
