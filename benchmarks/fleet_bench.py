"""Fleet-scale benchmark: what obspack's dashboards and rules cost on a real Prometheus as the fleet grows.

    python benchmarks/fleet_bench.py                    # 10, 100, 1000 pods; writes docs/benchmarks.md
    python benchmarks/fleet_bench.py --sizes 10,100 --no-report --json /tmp/fleet.json
    python benchmarks/fleet_bench.py --from-json /tmp/fleet.json   # only render the section again
    python benchmarks/fleet_bench.py --sizes 1000 --keep --workdir /tmp/fb   # then, here or on a server CPU:
    python benchmarks/fleet_bench.py --kept /tmp/fb/pods-1000 --no-report   # the queries and groups again

For each size it generates a synthetic fleet (obspack/demo/fleet.py: vLLM V1 and V0 with full
histograms, router copies, cAdvisor, HA kube-state-metrics, DCGM in both label modes, exporter series;
two clusters, 1 h at a 30 s scrape interval), with every pod holding 8 GPUs (`--gpus-per-pod`), and:

1. backfills it with `promtool tsdb create-blocks-from openmetrics`, one file per source, each as soon
   as it is written (the promtools and the generator share the cores);
2. backfills the rendered recording rules with `promtool tsdb create-blocks-from rules`, dependency
   level by level (obspack/demo/prometheus.py);
3. at the largest size, measures the rules live (benchmarks/fleet_live.py): the same fleet, written as
   one snapshot per source and scrape, is scraped by a Prometheus that evaluates the rendered rule
   files at the scrape interval (30 s, kube-prometheus-stack's default), as a user's server does:
   data in its head, scrapes beside the rules. Once every [5m] window is full it reads each group's
   `prometheus_rule_group_last_duration_seconds` for a few evaluations, the server's CPU per
   interval (and, before the rules are loaded, the CPU of the scrapes alone) and its missed
   iterations (`--no-live` skips this; it adds about 8 minutes);
4. starts Prometheus without rules and times every dashboard target (range query over the whole hour,
   `step` = the scrape interval, as Grafana asks for a panel of ~1000 px when the datasource's scrape
   interval is 30 s; tables are instant queries at the end), with the variables as on first load
   (All, or the first value), in rounds, next to naive queries that answer the same questions without
   the recording rules (benchmarks/fleet_queries.py). The server is restarted every 45 s, so that
   Prometheus's first compaction (one minute after start) never runs during a measurement: every size
   is measured on the same block layout. It also evaluates every rule group alone and counts the
   series each record adds.

5. plays the e2e incidents (obspack/demo: the engine incident and the memory planes, with a new pod
   appearing) on a live Prometheus and Alertmanager scraping and evaluating every 5 s, and reads how late
   each alert fired after the fake exporters began to show its condition (`--no-lags` skips this).

It prints progress to stderr and writes the tables into the "Fleet scale" section of docs/benchmarks.md
(other sections of that file are kept). Not part of CI: at 1000 pods the fleet is ~38 M samples and
13 GB of OpenMetrics text (each file deleted once backfilled); the whole run takes about 20 minutes on
2 cores. It needs `prometheus` and `promtool` (2.42) on PATH.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import fleet_live, fleet_report  # noqa: E402
from benchmarks.fleet_queries import (  # noqa: E402
    NAIVE,
    Dashboard,
    Window,
    fill,
    load_dashboards,
    resolve_variables,
)
from benchmarks.groups_alone import eval_seconds  # noqa: E402
from obspack.demo import fleet  # noqa: E402
from obspack.demo.fleet import FleetSpec, FleetSummary, Pod, write_openmetrics_by_source  # noqa: E402
from obspack.demo.processes import StackError, find_tool  # noqa: E402
from obspack.demo.prometheus import Prometheus, backfill_rules, running_prometheus  # noqa: E402

SESSION_S = 45.0  # restart the query server before Prometheus's first compaction (60 s after start)
LIVE_WARM_S = 300  # the live rules are read once every [5m] window holds scraped data
BACKFILL_INTERVAL = "60s"  # recording rules backfilled at Prometheus's default evaluation_interval
QUERY_TIMEOUT_S = (
    2.5  # a query slower than this (10x the panel target) is reported as "> 2.5 s", not repeated
)
REPEAT_BUDGET_S = 1.5  # stop repeating a query once its runs add up to this
KEPT_FILE = "fleet.json"  # beside a kept fleet's data: its window and what the report says of its size
KEPT = ("pods", "gpus", "series", "samples", "text_bytes")


PROMTOOL_ENV = {"GOGC": "400"}  # promtool's parser allocates per sample: less GC, ~15% faster


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------
# The fleet


@contextmanager
def gpu_dense(gpus_per_pod: int) -> Iterator[None]:
    """Make every pod of the synthetic fleet hold `gpus_per_pod` GPUs on a node of its own.

    A V1 pod with two data-parallel engines runs each at TP gpus/2; others at TP gpus. The generator
    still adds its one idle GPU per node. 0 keeps the generator's own shape (TP 1 or 2, 8-GPU nodes).
    """
    if gpus_per_pod <= 0:
        yield
        return
    original = fleet.fleet_pods

    def dense(spec: FleetSpec) -> list[Pod]:
        return [
            dataclasses.replace(
                pod,
                tp=max(1, gpus_per_pod // len(pod.engines)),
                node=f"gpu-node-{pod.index:04d}",
                node_index=pod.index,
                gpus=tuple(range(gpus_per_pod)),
                dcgm_mode="pod" if (pod.index + pod.cluster_index) % 2 == 0 else "exported",
            )
            for pod in original(spec)
        ]

    with mock.patch.object(fleet, "fleet_pods", dense):
        yield


def _promtool_openmetrics(promtool: str, source: Path, data: Path) -> None:
    # `--max-block-duration` (hidden in 2.42) lets a 1 h span that crosses a 2 h boundary stay one
    # block: promtool parses its whole input once per block.
    run = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", "--max-block-duration=54h",
         str(source), str(data)],
        capture_output=True, text=True, check=False, env={**os.environ, **PROMTOOL_ENV},
    )  # fmt: skip
    if run.returncode != 0:
        raise RuntimeError(f"promtool create-blocks-from openmetrics {source.name}:\n{run.stderr[-3000:]}")
    source.unlink()


def backfill_fleet(
    spec: FleetSpec, gpus_per_pod: int, work: Path, data: Path
) -> tuple[FleetSummary, int, float]:
    """Generate and backfill the fleet, promtool running on each source file as soon as it is written."""
    promtool = find_tool("promtool") or "promtool"
    text = work / "openmetrics"
    text.mkdir(parents=True, exist_ok=True)
    sizes: list[int] = []
    with ThreadPoolExecutor(max_workers=len(fleet.SOURCES)) as pool:
        futures: list[Future[None]] = []

        def done(path: Path) -> None:
            sizes.append(path.stat().st_size)
            futures.append(pool.submit(_promtool_openmetrics, promtool, path, data))

        started = time.perf_counter()
        with gpu_dense(gpus_per_pod):
            summary = write_openmetrics_by_source(spec, text, done)
        generated = time.perf_counter() - started
        for future in futures:
            future.result()
    shutil.rmtree(text, ignore_errors=True)
    return summary, sum(sizes), generated


# ---------------------------------------------------------------------------------------------------
# Talking to Prometheus, timed


@dataclass
class Timed:
    seconds: list[float] = field(default_factory=list)
    series: int = 0
    samples: int = 0  # totalQueryableSamples, from stats=all
    error: str = ""
    timed_out: bool = False

    @property
    def p50(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    @property
    def max(self) -> float:
        return max(self.seconds) if self.seconds else float("nan")


def timed_query(prom: Prometheus, expr: str, window: Window, instant: bool, into: Timed) -> None:
    """One query as Grafana sends it (POST form); the time is the HTTP round trip, JSON included."""
    if instant:
        path, params = "query", {"query": expr, "time": window.end}
    else:
        path, params = "query_range", {"query": expr, "start": window.start, "end": window.end,
                                       "step": window.step}  # fmt: skip
    body = urllib.parse.urlencode({**params, "stats": "all", "timeout": f"{QUERY_TIMEOUT_S:g}"}).encode()
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(f"{prom.url}/api/v1/{path}", data=body, timeout=300) as response:
            raw = response.read()
    except urllib.error.HTTPError as e:
        answer = json.loads(e.read() or b"{}")
        error = answer.get("error", "")
        if answer.get("errorType") == "timeout" or "timed out" in error or "deadline exceeded" in error:
            into.timed_out = True
            into.seconds.append(QUERY_TIMEOUT_S)
        else:
            into.error = (error or str(e))[:300]
        return
    into.seconds.append(time.perf_counter() - started)
    data = json.loads(raw)["data"]
    into.series = len(data["result"]) if isinstance(data["result"], list) else 1
    into.samples = int(data.get("stats", {}).get("samples", {}).get("totalQueryableSamples", 0))


def own_metrics(prom: Prometheus) -> dict[str, float]:
    """The server's own /metrics, as `name{labels}` -> value."""
    with urllib.request.urlopen(f"{prom.url}/metrics", timeout=30) as response:
        text = response.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


class QueryServer:
    """A Prometheus without rules over `data`, restarted whenever it has run for SESSION_S."""

    def __init__(self, data: Path):
        self.data = data
        self.stack = ExitStack()
        self.prom: Prometheus | None = None
        self.born = 0.0
        self.sessions = 0
        self.compactions = 0.0

    def get(self) -> Prometheus:
        if self.prom is None or time.monotonic() - self.born > SESSION_S:
            self.close()
            self.prom = self.stack.enter_context(running_prometheus(self.data))
            self.born = time.monotonic()
            self.sessions += 1
        return self.prom

    def close(self) -> None:
        if self.prom is not None:
            metrics = own_metrics(self.prom)
            self.compactions += metrics.get("prometheus_tsdb_compactions_triggered_total", 0.0)
        self.stack.close()
        self.stack = ExitStack()
        self.prom = None


# ---------------------------------------------------------------------------------------------------
# Rule groups, evaluated live


def run_live(pods: int, settings: Settings, pack: Path, size_dir: Path) -> fleet_live.LiveResult:
    """The same fleet scraped live for `LIVE_WARM_S` plus a few intervals, the pack's rules evaluated as a
    user's Prometheus does (benchmarks/fleet_live.py)."""
    warm = -(-LIVE_WARM_S // settings.scrape_s) + 1
    steps = warm + settings.evaluations + 3  # the data keeps moving until the last evaluation read
    spec = FleetSpec(pods=pods // 2, duration_s=(steps - 1) * settings.scrape_s, step_s=settings.scrape_s)
    snapshots = size_dir / "live-snapshots"
    log(f"{pods} pods: writing {steps} live snapshots per source")
    try:
        with gpu_dense(settings.gpus_per_pod):
            fleet_live.write_snapshots(spec, snapshots)
        rules = [pack / "prometheus" / "recording-rules.yaml", pack / "prometheus" / "alerts.yaml"]
        log(f"{pods} pods: scraping them every {settings.scrape_s}s, {warm} scrapes before the rules are read")
        return fleet_live.measure_live(
            snapshots, list(fleet.SOURCES), steps, rules, settings.scrape_s, warm, settings.evaluations,
            size_dir / "live", find_tool("prometheus") or "prometheus",
        )  # fmt: skip
    finally:
        shutil.rmtree(snapshots, ignore_errors=True)
        shutil.rmtree(size_dir / "live", ignore_errors=True)


# ---------------------------------------------------------------------------------------------------
# One fleet size


@dataclass
class SizeResult:
    pods: int
    gpus: int
    series: int
    samples: int
    text_bytes: int
    phases: dict[str, float] = field(default_factory=dict)
    live_cpu_s: float = 0.0  # the live Prometheus's CPU seconds per rule interval (scrapes and rules)
    scrape_cpu_s: float = 0.0  # the same with no rules loaded: the scrapes alone
    missed_iterations: float = 0.0
    scrape_s: dict[str, float] = field(default_factory=dict)  # source -> live scrape duration
    head_series: float = 0.0
    live_record_series: int = 0
    failed_scrapes: int = -1  # -1: not counted (runs before the count existed)
    live_error: str = ""
    rule_interval: str = ""
    rule_groups: dict[str, list[float]] = field(default_factory=dict)
    slowest_rule: dict[str, tuple[float, str]] = field(default_factory=dict)
    record_series: dict[str, int] = field(default_factory=dict)
    alone: dict[str, float] = field(default_factory=dict)  # group -> its rules' instant evaluations, summed
    variables: dict[str, Timed] = field(default_factory=dict)
    targets: dict[str, Timed] = field(default_factory=dict)
    naive: dict[str, Timed] = field(default_factory=dict)
    rows_unused: list[str] = field(default_factory=list)  # feature rows whose variable counts no engine
    unused_targets: list[str] = field(default_factory=list)  # targets of those rows (not expected to show data)
    query_sessions: int = 0
    compactions_during_queries: float = 0.0


@dataclass(frozen=True)
class Settings:
    duration_s: int
    scrape_s: int
    step_s: int
    runs: int
    gpus_per_pod: int
    evaluations: int


def run_size(
    pods: int,
    settings: Settings,
    pack: Path,
    work: Path,
    keep: bool = False,
    live: bool = True,
) -> SizeResult:
    """Generate, backfill, evaluate and query one fleet of `pods` vLLM pods (half in each cluster)."""
    clock = time.perf_counter
    size_dir = work / f"pods-{pods}"
    shutil.rmtree(size_dir, ignore_errors=True)
    data = size_dir / "data"
    data.mkdir(parents=True)
    spec = FleetSpec(pods=pods // 2, duration_s=settings.duration_s, step_s=settings.scrape_s)

    t0 = clock()
    summary, text_bytes, generated = backfill_fleet(spec, settings.gpus_per_pod, size_dir, data)
    result = SizeResult(
        pods=len(summary.pods), gpus=sum(len(p.gpus) for p in summary.pods), series=summary.series,
        samples=summary.samples, text_bytes=text_bytes,
    )  # fmt: skip
    result.phases["generate"] = generated
    result.phases["generate + backfill"] = clock() - t0
    log(f"{pods} pods: {summary.series:,} series, {summary.samples:,} samples, "
        f"{text_bytes / 1e9:.2f} GB text in {result.phases['generate + backfill']:.0f}s")  # fmt: skip

    t1 = clock()
    recording = yaml.safe_load((pack / "prometheus" / "recording-rules.yaml").read_text())["groups"]
    levels = backfill_rules(
        data, recording, start=summary.start, end=summary.end, eval_interval=BACKFILL_INTERVAL
    )
    result.phases["backfill recording rules"] = clock() - t1
    log(
        f"{pods} pods: recording rules backfilled in {levels} levels, {result.phases['backfill recording rules']:.0f}s"
    )

    t2 = clock()
    if live:
        result.rule_interval = f"{settings.scrape_s}s"
        try:
            measured = run_live(pods, settings, pack, size_dir)
        except (RuntimeError, OSError, StackError) as e:  # the other sizes' numbers and the queries are kept
            result.live_error = str(e)
            log(f"{pods} pods: the live rule groups were not measured: {e}")
        else:
            result.rule_groups, result.slowest_rule = measured.durations, measured.slowest_rule
            result.live_cpu_s, result.missed_iterations = measured.cpu_per_interval_s, measured.missed_iterations
            result.scrape_cpu_s = measured.scrape_cpu_per_interval_s
            result.scrape_s, result.head_series = measured.scrape_s, measured.head_series
            result.live_record_series, result.failed_scrapes = measured.record_series, measured.failed_scrapes
            log(f"{pods} pods: rule groups evaluated live; Prometheus used {result.live_cpu_s:.1f}s of CPU per "
                f"{result.rule_interval}")  # fmt: skip
        result.phases["rule evaluation"] = clock() - t2

    t3 = clock()
    measure_queries(data, summary.start, summary.end, settings, pack, result)
    result.phases["queries"] = clock() - t3
    log(f"{pods} pods: {len(result.targets)} dashboard targets and {len(result.naive)} naive queries "
        f"in {result.phases['queries']:.0f}s ({result.query_sessions} server sessions)")  # fmt: skip
    if keep:
        kept = {"start": summary.start, "end": summary.end, **{k: getattr(result, k) for k in KEPT}}
        (size_dir / KEPT_FILE).write_text(json.dumps(kept, indent=2))
    else:
        shutil.rmtree(size_dir, ignore_errors=True)
    return result


def run_kept(size_dir: Path, settings: Settings, pack: Path) -> SizeResult:
    """Time the queries and groups again on a fleet that `--keep` left, here or carried to another machine."""
    kept = json.loads((size_dir / KEPT_FILE).read_text())
    result = SizeResult(**{k: kept[k] for k in KEPT})
    started = time.perf_counter()
    measure_queries(size_dir / "data", kept["start"], kept["end"], settings, pack, result)
    result.phases["queries"] = time.perf_counter() - started
    log(f"kept fleet of {result.pods} pods: {len(result.targets)} dashboard targets and {len(result.naive)} "
        f"naive queries in {result.phases['queries']:.0f}s")  # fmt: skip
    return result


@dataclass
class _Planned:
    into: dict[str, Timed]
    key: str
    expr: str
    instant: bool


def measure_queries(
    data: Path,
    start: int,
    end: int,
    settings: Settings,
    pack: Path,
    result: SizeResult,
) -> None:
    """Time every dashboard target and naive query over the fleet's span (`start` to `end`, its last sample),
    in rounds; then count recorded series."""
    window = Window(start, end, settings.step_s, settings.scrape_s)
    server = QueryServer(data)
    try:
        dashboards = load_dashboards(pack / "grafana")
        plan: list[_Planned] = []
        first_load: dict[str, dict[str, str]] = {}
        for dashboard in dashboards:
            values = resolve_variables(dashboard, _timed_label_values(server, window, result, dashboard))
            first_load[dashboard.name] = values
            for variable, count in dashboard.rows:
                if not server.get().query(fill(count, values, window), window.end):
                    result.rows_unused.append(f"{dashboard.name} / {variable}")
                    result.unused_targets += [t.key for t in dashboard.targets if t.row == variable]
            for target in dashboard.targets:
                plan.append(
                    _Planned(result.targets, target.key, fill(target.expr, values, window), target.instant)
                )
        for naive in NAIVE:
            values = first_load[naive.obspack[0]]
            plan.append(
                _Planned(result.naive, naive.question, fill(naive.expr, values, window), naive.instant)
            )
        for item in plan:
            item.into[item.key] = Timed()
        for run in range(settings.runs):
            for item in plan:
                timed = item.into[item.key]
                if timed.timed_out or timed.error or (run and sum(timed.seconds) > REPEAT_BUDGET_S):
                    continue
                timed_query(server.get(), item.expr, window, item.instant, timed)

        recording = yaml.safe_load((pack / "prometheus" / "recording-rules.yaml").read_text())["groups"]
        alerts = yaml.safe_load((pack / "prometheus" / "alerts.yaml").read_text())["groups"]
        result.alone = alone_costs(server.get(), recording, alerts, end, settings.runs)

        records = sorted({r["record"] for g in recording for r in g["rules"]})
        counted = server.get().query(
            f'count by (__name__) ({{__name__=~"{"|".join(map(re.escape, records))}"}})', end
        )
        found = {s["metric"]["__name__"]: int(float(s["value"][1])) for s in counted}
        result.record_series = {name: found.get(name, 0) for name in records}
    finally:
        server.close()
    result.query_sessions = server.sessions
    result.compactions_during_queries = server.compactions


def alone_costs(
    prom: Prometheus, recording: list[dict[str, Any]], alerts: list[dict[str, Any]], at: int, runs: int = 1
) -> dict[str, float]:
    """Each group's rules evaluated one by one at the last sample on an otherwise idle server, summed; the
    median of `runs` passes over every group (one pass on a shared machine swings by half)."""
    passes: dict[str, list[float]] = {}
    for _ in range(max(runs, 1)):
        for file, groups in (("recording-rules.yaml", recording), ("alerts.yaml", alerts)):
            for group in groups:
                seconds = sum(eval_seconds(prom.url, r["expr"], at, timeout_s=120) for r in group["rules"])
                passes.setdefault(f"{file}: {group['name']}", []).append(seconds)
    return {name: statistics.median(values) for name, values in passes.items()}


def _timed_label_values(
    server: QueryServer, window: Window, result: SizeResult, dashboard: Dashboard
) -> Callable[[str, str], list[str]]:
    def label_values(label: str, selector: str) -> list[str]:
        into = result.variables.setdefault(f"{dashboard.name} / {label}", Timed())
        prom = server.get()
        started = time.perf_counter()
        values = prom.label_values(label, selector, window.start, window.end)
        into.seconds.append(time.perf_counter() - started)
        into.series = len(values)
        return values

    return label_values


# ---------------------------------------------------------------------------------------------------


def measure_lags(work: Path) -> list[dict[str, Any]]:
    """Both e2e incidents on a live stack (obspack/demo/narrate.py), every alert's lag."""
    from obspack.demo.narrate import all_pods, play_engine, play_memory_planes
    from obspack.demo.stack import Stack, Tools

    with Stack(work / "live", all_pods(), Tools.find()) as stack:
        stack.wait_for_data()
        lags = play_engine(stack) + play_memory_planes(stack)
    return [{**dataclasses.asdict(lag), "interval_s": stack.interval_s} for lag in lags]


def render_pack(out: Path) -> None:
    command = [sys.executable, "-m", "obspack", "render", "--out", str(out)]
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100,1000", help="vLLM pods per fleet, comma separated")
    parser.add_argument("--duration", type=int, default=3600, help="seconds of data per fleet")
    parser.add_argument("--scrape-interval", type=int, default=30)
    parser.add_argument("--step", type=int, default=30, help="range query step ($__interval)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per query")
    parser.add_argument("--gpus-per-pod", type=int, default=8, help="0: the generator's own TP 1/2 pods")
    parser.add_argument("--evaluations", type=int, default=3, help="live rule group evaluations to read")
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temporary folder in /tmp")
    parser.add_argument("--json", type=Path, default=None, help="also write all numbers here")
    parser.add_argument(
        "--report", type=Path, default=ROOT / "docs" / "benchmarks.md", help="file whose section is replaced"
    )
    parser.add_argument("--no-report", action="store_true", help="print the section instead of writing it")
    parser.add_argument("--keep", action="store_true", help="keep each fleet's TSDB under --workdir")
    parser.add_argument(
        "--from-json", type=Path, default=None, help="only render the section from saved numbers"
    )
    parser.add_argument("--no-lags", action="store_true", help="skip the live alert-lag run")
    parser.add_argument("--no-live", action="store_true", help="skip the live rule groups (largest size only)")
    parser.add_argument(
        "--kept", type=Path, default=None,
        help="a fleet that --keep left (its pods-N folder): only time its queries and groups again",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.from_json:
        results, settings, total, meta = fleet_report.from_json(json.loads(args.from_json.read_text()))
        return _report(args, fleet_report.section(results, settings, total, meta))

    if args.kept and not (args.kept / KEPT_FILE).is_file():
        print(f"error: {args.kept} holds no {KEPT_FILE}: not a fleet kept by --keep", file=sys.stderr)
        return 1
    for tool in ("prometheus",) if args.kept else ("prometheus", "promtool"):
        if not find_tool(tool):
            print(f"error: {tool} not found on PATH", file=sys.stderr)
            return 1
    settings = Settings(args.duration, args.scrape_interval, args.step, args.runs, args.gpus_per_pod,
                        args.evaluations)  # fmt: skip
    sizes = [] if args.kept else sorted(int(s) for s in args.sizes.split(","))
    started = time.perf_counter()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="obspack-fleet-bench-"))
    results: list[SizeResult] = []
    try:
        render_pack(work / "pack")
        if args.kept:
            results.append(run_kept(args.kept, settings, work / "pack"))
        for pods in sizes:
            live = not args.no_live and pods == sizes[-1]
            results.append(run_size(pods, settings, work / "pack", work, keep=args.keep, live=live))
        lags = [] if args.no_lags or args.kept else measure_lags(work)
        log(f"live alert lags measured: {len(lags)} alerts")
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    total = time.perf_counter() - started
    log(f"benchmark done in {total:.0f}s")

    numbers = fleet_report.as_json(results, settings, total, lags)
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=2))
    return _report(args, fleet_report.section(results, settings, total, numbers))


def _report(args: argparse.Namespace, section: str) -> int:
    if args.no_report:
        print(section)
    else:
        fleet_report.write_section(args.report, section)
        log(f"wrote the Fleet scale section of {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
