"""A real Prometheus for tests: backfill a TSDB with promtool, serve it on 127.0.0.1, query it, stop it.

    data = tmp_path / "data"
    backfill_openmetrics(fleet_file, data)
    backfill_rules(data, groups, start=..., end=...)   # recording rules, dependencies first
    with running_prometheus(data) as prom:
        prom.query_range("up", start, end, step=60)

`running_prometheus` picks a free port, keeps its config and log in a temporary folder, and always stops
the server (SIGTERM, then SIGKILL), even when the test fails. The binaries come from `require_tool`, so a
missing one skips the test on a laptop and fails it in CI.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.tools import require_tool

READY_TIMEOUT_S = 20.0


class PrometheusError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Prometheus:
    url: str

    def api(self, path: str, **params: Any) -> Any:
        """GET an /api/v1 endpoint; list values become repeated parameters (match[])."""
        query = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=30) as response:
                body = json.load(response)
        except urllib.error.HTTPError as e:
            body = json.loads(e.read() or b"{}")
            raise PrometheusError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}") from None
        if body.get("status") != "success":
            raise PrometheusError(f"{path} {params}: {body}")
        return body["data"]

    def query(self, expr: str, at: float) -> list[dict[str, Any]]:
        data = self.api("query", query=expr, time=at)
        return data["result"] if data["resultType"] in ("vector", "matrix") else [{"value": data["result"]}]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        return self.api("query_range", query=expr, start=start, end=end, step=step)["result"]

    def label_values(self, label: str, match: str, start: float, end: float) -> list[str]:
        return self.api(f"label/{label}/values", **{"match[]": [match]}, start=start, end=end)

    def series(self, match: str, start: float, end: float) -> list[dict[str, str]]:
        return self.api("series", **{"match[]": [match]}, start=start, end=end)

    def reload(self) -> None:
        """Re-read the configuration and rule files (the server runs with --web.enable-lifecycle)."""
        request = urllib.request.Request(f"{self.url}/-/reload", method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            if response.status != 200:
                raise PrometheusError(f"reload failed: HTTP {response.status}")

    def wait_for_rule_evaluations(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Wait until every rule of every loaded group has been evaluated at least once."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rules = [r for g in self.api("rules")["groups"] for r in g["rules"]]
            if all(r.get("health") != "unknown" for r in rules):
                return
            time.sleep(0.2)
        raise PrometheusError(f"rules not evaluated after {timeout}s")


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, path: str = "/-/ready") -> None:
    """Until `url + path` answers 200; fails with the server's log when it exits or takes too long."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise PrometheusError(f"{url} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}{path}", timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.05)
    raise PrometheusError(f"{url} not ready after {READY_TIMEOUT_S}s:\n{log.read_text()[-3000:]}")


@contextmanager
def running_prometheus(
    data_dir: Path, *, rule_files: Sequence[Path] = (), evaluation_interval: str = "15s"
) -> Iterator[Prometheus]:
    """Serve `data_dir` on a free 127.0.0.1 port until the block ends; no scrape targets."""
    binary = require_tool("prometheus")
    data_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="obspack-prometheus-") as tmp:
        config = Path(tmp) / "prometheus.yml"
        config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "15s", "evaluation_interval": evaluation_interval},
                    "rule_files": [str(p.resolve()) for p in rule_files],
                }
            )
        )
        log = Path(tmp) / "prometheus.log"
        process, url = _start(binary, config, data_dir, log)
        try:
            yield Prometheus(url)
        finally:
            stop(process)


def _start(binary: str, config: Path, data_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    for attempt in range(3):  # the free port can be taken between the probe and the bind
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={data_dir}",
                    "--storage.tsdb.retention.time=100y",  # backfilled data may be hours old
                    "--web.enable-lifecycle",  # Prometheus.reload()
                    f"--web.listen-address=127.0.0.1:{port}",
                    "--log.level=warn",
                ],
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_ready(url, process, log)
            return process, url
        except PrometheusError:
            stop(process)
            if attempt == 2 or "address already in use" not in log.read_text():
                raise
    raise AssertionError("unreachable")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def backfill_openmetrics(source: Path, data_dir: Path, max_block: str = "2h") -> None:
    """Turn an OpenMetrics file into TSDB blocks in `data_dir`, each spanning at most `max_block` (weeks of
    data in 2h blocks take long to write and to open)."""
    promtool = require_tool("promtool")
    data_dir.mkdir(parents=True, exist_ok=True)
    block = f"--max-block-duration={max_block}"
    run = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", block, str(source), str(data_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise PrometheusError(f"promtool create-blocks-from openmetrics failed:\n{run.stderr[-3000:]}")


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
            raise PrometheusError(
                f"recording rules depend on each other in a cycle: {[r['record'] for r in pending]}"
            )
        levels.append(ready)
        done |= {r["record"] for r in ready}
        pending = [r for r in pending if r not in ready]
    return levels


def backfill_rules(
    data_dir: Path, groups: Sequence[dict[str, Any]], *, start: int, end: int, eval_interval: str = "30s"
) -> int:
    """Backfill recording rules over [start, end] into `data_dir`, one dependency level at a time.

    `promtool tsdb create-blocks-from rules` evaluates rules against a running Prometheus and cannot see
    records it is writing itself, so a rule that reads another record waits for the next level (served
    by a restarted Prometheus that has the earlier level's blocks). Returns the number of levels.
    """
    promtool = require_tool("promtool")
    levels = rule_levels(groups)
    for number, rules in enumerate(levels):
        with tempfile.TemporaryDirectory(prefix="obspack-rules-") as tmp:
            rule_file = Path(tmp) / f"level-{number}.yaml"
            rule_file.write_text(yaml.safe_dump({"groups": [{"name": f"level-{number}", "rules": rules}]}))
            out = Path(tmp) / "blocks"
            with running_prometheus(data_dir) as prom:
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
                raise PrometheusError(
                    f"promtool create-blocks-from rules (level {number}) failed:\n{run.stderr[-3000:]}"
                )
            for block in out.iterdir() if out.exists() else ():
                if block.is_dir():
                    shutil.move(str(block), data_dir / block.name)
    return len(levels)
