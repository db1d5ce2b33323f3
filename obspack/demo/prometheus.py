"""A Prometheus this process runs on 127.0.0.1: its client, and one serving a backfilled TSDB.

`Prometheus` is the doctor's client (obspack.doctor.api: bounded bytes and time, checked shapes) with
what a local server's owner also does: query at the current time, list alerts and rules, reload, and
wait for the rules' first evaluation. The demo, the tests and the benchmarks ask Prometheus through it.

    data = tmp_path / "data"
    backfill_openmetrics(fleet_file, data)
    backfill_rules(data, groups, start=..., end=...)   # recording rules, dependencies first
    with running_prometheus(data) as prom:
        prom.query_range("up", start, end, step=60)

`running_prometheus` starts one on a free port with its config and log in a temporary folder, and
always stops it, also when the block fails.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from obspack.demo.processes import (
    READY_TIMEOUT_S,
    StackError,
    is_ready,
    prometheus_argv,
    require,
    start_server,
)
from obspack.doctor.api import Connection, PrometheusAPI

LARGE = 1024 * 1024 * 1024  # a local server's answers may be large (the benchmarks' fleets): 1 GiB


class Prometheus(PrometheusAPI):
    """The `/api/v1` of a Prometheus (or VictoriaMetrics) on 127.0.0.1, plus its lifecycle calls."""

    def __init__(self, url: str, *, timeout_s: float = 30.0, max_bytes: int = LARGE) -> None:
        super().__init__(Connection(url, timeout_s=timeout_s, max_bytes=max_bytes))
        self.url = self.base

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query, now unless `at` (Unix seconds) is given."""
        return super().query(expr, time.time() if at is None else at)

    def rules(self) -> list[dict[str, Any]]:
        """Every loaded rule (recording and alerting) with its group's name as `group`, `health`, `lastError`."""
        groups = self.get("rules", shape="rules")["groups"]
        return [{**rule, "group": g["name"]} for g in groups for rule in g["rules"]]

    def ready(self) -> bool:
        return is_ready(f"{self.url}/-/ready")

    def reload(self) -> None:
        """Re-read the configuration and rule files (the server runs with --web.enable-lifecycle)."""
        response = httpx.post(f"{self.url}/-/reload", timeout=self.connection.timeout_s)
        if response.status_code != 200:
            raise StackError(f"{self.url}/-/reload answered {response.status_code}: {response.text[:300]}")

    def wait_for_rule_evaluations(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Wait until every rule of every loaded group has been evaluated at least once."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(r.get("health") != "unknown" for r in self.rules()):
                return
            time.sleep(0.2)
        raise StackError(f"rules not evaluated after {timeout:g}s")


@contextlib.contextmanager
def running_prometheus(
    data_dir: Path,
    *,
    rule_files: Sequence[Path] = (),
    evaluation_interval: str = "15s",
    binary: str | None = None,
) -> Iterator[Prometheus]:
    """Serve `data_dir` on a free 127.0.0.1 port until the block ends; no scrape targets."""
    binary = binary or require("prometheus")[0]
    data_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="obspack-prometheus-") as tmp, contextlib.ExitStack() as cleanup:
        config = Path(tmp) / "prometheus.yml"
        settings = {
            "global": {"scrape_interval": "15s", "evaluation_interval": evaluation_interval},
            "rule_files": [str(p.resolve()) for p in rule_files],
        }
        config.write_text(yaml.safe_dump(settings))
        argv = prometheus_argv(
            binary, config, data_dir, "--storage.tsdb.retention.time=100y", "--log.level=warn"
        )  # backfilled data may be years old
        server = start_server("prometheus", argv, "/-/ready", Path(tmp), cleanup)
        with Prometheus(server.url) as prom:
            yield prom


def backfill_openmetrics(source: Path, data_dir: Path, max_block: str = "2h", promtool: str | None = None) -> None:
    """Turn an OpenMetrics file into TSDB blocks in `data_dir`, each spanning at most `max_block` (weeks of
    data in 2h blocks take long to write and to open)."""
    promtool = promtool or require("promtool")[0]
    data_dir.mkdir(parents=True, exist_ok=True)
    block = f"--max-block-duration={max_block}"
    run = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", block, str(source), str(data_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise StackError(f"promtool create-blocks-from openmetrics failed:\n{run.stderr[-3000:]}")


def _references(expr: str, record: str) -> bool:
    return re.search(rf"(?<![\w:]){re.escape(record)}(?![\w:])", expr) is not None


def rule_levels(groups: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Recording rules ordered so that each level reads only raw series and records of earlier levels."""
    rules = [rule for group in groups for rule in group["rules"] if "record" in rule]
    records = {rule["record"] for rule in rules}
    levels: list[list[dict[str, Any]]] = []
    done: set[str] = set()
    pending = rules
    while pending:
        ready = [
            r
            for r in pending
            if all(name in done or not _references(r["expr"], name) for name in records - {r["record"]})
        ]
        if not ready:
            raise StackError(f"recording rules depend on each other in a cycle: {[r['record'] for r in pending]}")
        levels.append(ready)
        done |= {r["record"] for r in ready}
        pending = [r for r in pending if r not in ready]
    return levels


def backfill_rules(
    data_dir: Path,
    groups: Sequence[dict[str, Any]],
    *,
    start: int,
    end: int,
    eval_interval: str = "30s",
    promtool: str | None = None,
    prometheus: str | None = None,
) -> int:
    """Backfill recording rules over [start, end] into `data_dir`, one dependency level at a time.

    `promtool tsdb create-blocks-from rules` evaluates rules against a running Prometheus and cannot see
    records it is writing itself, so a rule that reads another record waits for the next level (served
    by a restarted Prometheus that has the earlier level's blocks). Returns the number of levels.
    """
    promtool = promtool or require("promtool")[0]
    levels = rule_levels(groups)
    for number, rules in enumerate(levels):
        with tempfile.TemporaryDirectory(prefix="obspack-rules-") as tmp:
            rule_file = Path(tmp) / f"level-{number}.yaml"
            rule_file.write_text(yaml.safe_dump({"groups": [{"name": f"level-{number}", "rules": rules}]}))
            out = Path(tmp) / "blocks"
            with running_prometheus(data_dir, binary=prometheus) as prom:
                run = subprocess.run(
                    [
                        promtool,
                        "tsdb",
                        "create-blocks-from",
                        "rules",
                        f"--start={start}",
                        f"--end={end}",
                        f"--url={prom.url}",
                        f"--output-dir={out}",
                        f"--eval-interval={eval_interval}",
                        "--quiet",
                        str(rule_file),
                    ],
                    capture_output=True,
                    text=True,
                    check=False,
                )
            if run.returncode != 0:
                raise StackError(
                    f"promtool create-blocks-from rules (level {number}) failed:\n{run.stderr[-3000:]}"
                )
            for block in out.iterdir() if out.exists() else ():
                if block.is_dir():
                    shutil.move(str(block), data_dir / block.name)
    return len(levels)
