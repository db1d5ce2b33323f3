"""The rule groups on a live Prometheus: the fleet scraped step by step, the pack's rules at its interval.

Backfilled blocks answer queries about the past; what a user's Prometheus pays for the rules is
measured on data it scraped itself, in its head, while it keeps scraping. So the fleet is written as
one OpenMetrics snapshot per source and step (no timestamps), a local server hands each source's
next snapshot to every scrape (`sendfile`, so serving costs little CPU), and a Prometheus scrapes the
sources at the fleet's interval and evaluates the rendered rule files at the same interval, as
kube-prometheus-stack does. Once every `[5m]` window is full (`warm_steps` scrapes), it reads each
group's `prometheus_rule_group_last_duration_seconds` for a few evaluations, the server's CPU per
interval and its missed iterations. The rules are loaded (a config reload) only after a few intervals of
scrapes alone, whose CPU is the baseline: the pack's own cost is the difference.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from obspack.demo.fleet import FleetSpec, FleetSummary, write_openmetrics_by_source
from obspack.demo.processes import prometheus_argv, start_server
from obspack.demo.prometheus import Prometheus

BASELINE_SCRAPES = 3  # scrape intervals measured before the rules are loaded

_GROUP = re.compile(r'^prometheus_rule_group_(\w+)\{rule_group="[^;"]*/([^/;"]+);([^"]+)"\} (\S+)$', re.M)


def write_snapshots(spec: FleetSpec, out: Path) -> FleetSummary:
    """The fleet as one OpenMetrics file per source and step (`vllm.0`, `vllm.1`, ...) without timestamps:
    what each source's /metrics shows at each scrape."""

    def split(path: Path) -> None:
        files = [(out / f"{path.stem}.{k}").open("w", encoding="utf-8", buffering=1 << 20) for k in range(spec.steps)]
        try:
            with path.open(encoding="utf-8") as source:
                for line in source:
                    if line.startswith("#"):
                        if line != "# EOF\n":
                            for f in files:
                                f.write(line)
                        continue
                    text, stamp = line.rsplit(" ", 1)
                    files[(int(stamp) - spec.first) // spec.step_s].write(text + "\n")
        finally:
            for f in files:
                f.write("# EOF\n")
                f.close()
        path.unlink()

    out.mkdir(parents=True, exist_ok=True)
    return write_openmetrics_by_source(spec, out, done=split)


class StepServer:
    """Serves `/SOURCE`: the n-th request for a source gets its step n snapshot (the last one after the end)."""

    def __init__(self, folder: Path, sources: Sequence[str], steps: int):
        self.folder, self.sources, self.steps = folder, frozenset(sources), steps
        self.served: dict[str, int] = {}
        lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                source = self.path.strip("/")
                if source not in server.sources:  # nothing but the snapshots is served, whatever the path
                    self.send_error(404)
                    return
                with lock:
                    step = min(server.served.get(source, 0), server.steps - 1)
                    server.served[source] = server.served.get(source, 0) + 1
                path = server.folder / f"{source}.{step}"
                self.send_response(200)
                self.send_header("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
                self.send_header("Content-Length", str(path.stat().st_size))
                self.end_headers()
                self.wfile.flush()
                with path.open("rb") as f:
                    self.connection.sendfile(f)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> StepServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass
class LiveResult:
    durations: dict[str, list[float]] = field(default_factory=dict)  # "file: group" -> seconds per evaluation
    slowest_rule: dict[str, tuple[float, str]] = field(default_factory=dict)
    cpu_per_interval_s: float = 0.0  # the Prometheus process's CPU (user + system) per interval while measured
    scrape_cpu_per_interval_s: float = 0.0  # the same before the rules were loaded: scrapes alone
    missed_iterations: float = 0.0
    scrape_s: dict[str, float] = field(default_factory=dict)  # source -> last scrape's duration
    head_series: float = 0.0
    record_series: int = 0  # the records' series at the end: the rules read live data, not stale
    failed_scrapes: int = 0  # scrapes of the fleet that failed during the run (each leaves a gap)


def _config(address: str, sources: Sequence[str], interval_s: int, rule_files: Sequence[Path]) -> dict[str, Any]:
    return {
        "global": {
            "scrape_interval": f"{interval_s}s",
            "scrape_timeout": f"{interval_s}s",
            "evaluation_interval": f"{interval_s}s",
        },
        "rule_files": [str(p.resolve()) for p in rule_files],
        "scrape_configs": [
            {
                "job_name": f"fleet-{source}",
                "honor_labels": True,  # the fleet's series carry their own job and instance
                "honor_timestamps": False,
                "metrics_path": f"/{source}",
                "static_configs": [{"targets": [address]}],
            }
            for source in sources
        ],
    }


def _own(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:
        return response.read().decode()


def rule_group_metrics(url: str) -> dict[str, dict[str, float]]:
    """Each rule group's own metrics on the Prometheus at `url`, as `file: group` -> {name less
    `prometheus_rule_group_`: value} (`last_duration_seconds`, `last_evaluation_timestamp_seconds`,
    `iterations_missed_total`, ...)."""
    out: dict[str, dict[str, float]] = {}
    for m in _GROUP.finditer(_own(url)):
        out.setdefault(f"{m.group(2)}: {m.group(3)}", {})[m.group(1)] = float(m.group(4))
    return out


def _records(rule_files: Sequence[Path]) -> list[str]:
    return sorted(
        {rule["record"] for f in rule_files for g in yaml.safe_load(f.read_text())["groups"] for rule in g["rules"] if "record" in rule}
    )


def measure_live(
    snapshots: Path,
    sources: Sequence[str],
    steps: int,
    rule_files: Sequence[Path],
    interval_s: int,
    warm_steps: int,
    evaluations: int,
    work: Path,
    binary: str,
) -> LiveResult:
    """Scrape the snapshots with a Prometheus evaluating `rule_files`; read the groups once warm."""
    result = LiveResult()
    work.mkdir(parents=True, exist_ok=True)
    with StepServer(snapshots, sources, steps) as steps_server, contextlib.ExitStack() as cleanup:
        config = work / "prometheus.yml"
        # Scrapes only at first, for the baseline a server without the pack pays; the rules from `warm_steps - 1`.
        config.write_text(yaml.safe_dump(_config(steps_server.address, sources, interval_s, [])))
        argv = prometheus_argv(binary, config, work / "data", "--storage.tsdb.retention.time=1d", "--log.level=warn")
        server = start_server("prometheus-live", argv, "/-/ready", work, cleanup)
        prom = cleanup.enter_context(Prometheus(server.url, timeout_s=60))
        started = time.monotonic()
        deadline = started + (steps + 4) * interval_s

        def scraped(count: int) -> None:
            while min((steps_server.served.get(s, 0) for s in sources), default=0) < count:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the live Prometheus made {steps_server.served} of {count} scrapes in time")
                time.sleep(1)

        scraped(warm_steps - 1 - BASELINE_SCRAPES)
        cpu0, t0 = server.cpu_seconds(), time.monotonic()
        scraped(warm_steps - 1)
        result.scrape_cpu_per_interval_s = (server.cpu_seconds() - cpu0) / (time.monotonic() - t0) * interval_s
        config.write_text(yaml.safe_dump(_config(steps_server.address, sources, interval_s, rule_files)))
        prom.reload()
        scraped(warm_steps + 1)  # a round of every group first: their records exist when the reading starts
        warm = time.time()
        cpu0, t0 = server.cpu_seconds(), time.monotonic()
        missed0: dict[str, float] = {}
        seen: dict[str, float] = {}
        while time.monotonic() < deadline:
            latest = rule_group_metrics(prom.url)
            for group, values in latest.items():
                missed0.setdefault(group, values.get("iterations_missed_total", 0.0))
                stamp = values.get("last_evaluation_timestamp_seconds", 0.0)
                if stamp > warm and stamp != seen.get(group):
                    seen[group] = stamp
                    result.durations.setdefault(group, []).append(values["last_duration_seconds"])
            if latest and all(len(result.durations.get(g, [])) >= evaluations for g in latest):
                result.missed_iterations = sum(
                    v.get("iterations_missed_total", 0.0) - missed0[g] for g, v in latest.items()
                )
                break
            time.sleep(2)
        else:
            raise RuntimeError("the live Prometheus did not evaluate every group in time")
        result.cpu_per_interval_s = (server.cpu_seconds() - cpu0) / (time.monotonic() - t0) * interval_s
        # Every scrape of the run, not only the last: a failed one leaves a gap, and stale series make rules cheap.
        span = f"{int(time.monotonic() - started) + interval_s}s"
        failed = prom.query(f'sum(count_over_time((up{{job=~"fleet-.*"}} == 0)[{span}:{interval_s}s]))')
        result.failed_scrapes = int(float(failed[0]["value"][1])) if failed else 0
        last = prom.query("scrape_duration_seconds")
        result.scrape_s = {d["metric"]["job"].removeprefix("fleet-"): float(d["value"][1]) for d in last}
        head = re.search(r"^prometheus_tsdb_head_series (\S+)$", _own(prom.url), re.M)
        result.head_series = float(head.group(1)) if head else 0.0
        names = "|".join(re.escape(r) for r in _records(rule_files))
        records = prom.query(f'count({{__name__=~"{names}"}})')
        result.record_series = int(float(records[0]["value"][1])) if records else 0
        for group in prom.get("rules")["groups"]:  # unchecked: the shape drops each rule's evaluationTime
            rules = sorted(group["rules"], key=lambda rule: -rule.get("evaluationTime", 0))
            if rules:
                key = f"{Path(group['file']).name}: {group['name']}"
                result.slowest_rule[key] = (rules[0]["evaluationTime"], rules[0].get("name", ""))
    return result
