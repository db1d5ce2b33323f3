"""How long `obspack rightsize` takes, how many requests it sends and how much memory it needs, as the fleet grows.

    python benchmarks/rightsize_bench.py                 # 100 and 1000 vLLM pods, 14 days
    python benchmarks/rightsize_bench.py --sizes 1000 --concurrency 1,4,8
    python benchmarks/rightsize_bench.py --sizes 1000 --concurrency 2 --compare /tmp/obspack-before   # before/after

Each fleet repeats the workloads of the rightsize tests (obspack/demo/rightsize_fleet.py: model load peaks, an OOM
kill, long prompts, a StatefulSet, a LeaderWorkerSet with a full KV cache, a release that raised memory, a
young deployment, well-sized ones in two clusters), each copy in one of 25 namespaces, until the fleet has
the pods asked for. Gauges are sampled every 5 minutes over 14 days (the queries' step; a real 30 s scrape
holds 10x the raw samples, which the range functions over the window read and the subqueries do not),
counters every 6 hours. It is backfilled with promtool into one block and served by a real Prometheus;
`obspack rightsize` then runs in a separate process per concurrency, which reports its peak RSS.

It prints the fleet, then per run: wall time, requests, peak RSS of the command, the workloads found and the
slowest questions. Not part of CI. Needs `prometheus` and `promtool` on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from obspack.demo import rightsize_fleet as fleet  # noqa: E402
from obspack.demo.processes import find_tool  # noqa: E402
from obspack.demo.prometheus import running_prometheus  # noqa: E402

NAMESPACES = 25
# Runs rightsize in a fresh interpreter and prints its report's numbers and the process's peak RSS.
CLIENT = """
import json, resource, sys, time
from obspack.config import ObspackConfig
from obspack.doctor.api import Connection
from obspack.rightsize.run import rightsize
from obspack.rightsize.settings import Options
url, at, concurrency = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
started = time.perf_counter()
report = rightsize(ObspackConfig(), Connection(url, concurrency=concurrency, timeout_s=300), Options(at=at))
print(json.dumps({
    "seconds": time.perf_counter() - started,
    "requests": report.requests,
    "workloads": len(report.workloads),
    "actionable": sum(1 for w in report.workloads if w.actionable),
    "kills": sum(1 for w in report.workloads if getattr(w, "backtest", None) is not None and w.backtest.kills),
    "failures": [f"{f.quantity}: {f.error}" for f in report.failures],
    "slowest": report.slowest,
    "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def scaled(pods: int):  # noqa: ANN201
    """Copies of the test workloads until the fleet holds `pods` pods (the last copy may add one more)."""
    shapes = [w for w in fleet.WORKLOADS]
    made = {"pods": 0}

    def build(f: fleet.Fleet) -> None:
        i = 0
        while f.pods < pods:
            shape = shapes[i % len(shapes)]
            shape(f, f"team-{i % NAMESPACES:02d}", f"-{i}")
            i += 1
        made["pods"] = f.pods

    return build, made


def backfill(pods: int, folder: Path) -> tuple[int, int, float]:
    promtool = find_tool("promtool") or "promtool"
    text = folder / "fleet.om"
    started = time.perf_counter()
    build, made = scaled(pods)
    samples = fleet.write_fleet(text, (build,))
    size = text.stat().st_size
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=4320h", str(text), str(folder / "data")],
        check=True, capture_output=True,
    )
    text.unlink()
    log(f"{made['pods']} pods: {samples:,} samples, {size / 1e9:.2f} GB OpenMetrics, generated and backfilled in "
        f"{time.perf_counter() - started:.0f} s")
    return made["pods"], samples, size


def measure(checkout: Path, url: str, concurrency: int) -> dict:
    """One run of `checkout`'s rightsize against `url`, in a fresh interpreter."""
    run = subprocess.run(
        [sys.executable, "-c", CLIENT, url, str(fleet.END), str(concurrency)],
        capture_output=True, text=True, cwd=checkout, check=False, env={**os.environ, "PYTHONPATH": str(checkout)},
    )
    if run.returncode != 0:
        raise SystemExit(f"rightsize failed: {run.stderr[-2000:]}")
    return json.loads(run.stdout)


def run_size(pods: int, args: argparse.Namespace, work: Path) -> list[str]:
    folder = work / f"pods-{pods}"
    folder.mkdir(parents=True)
    made, samples, _ = backfill(pods, folder)
    lines = []
    checkouts = [("this", ROOT)] + ([("compared", Path(args.compare))] if args.compare else [])
    with running_prometheus(folder / "data") as prom:
        for concurrency in args.concurrency:
            for attempt in range(args.runs):
                for label, checkout in checkouts:
                    result = measure(checkout, prom.url, concurrency)
                    line = (
                        f"| {made} | {samples / 1e6:.1f} M | {label} | {concurrency} | {attempt + 1} | "
                        f"{result['seconds']:.1f} s | {result['requests']} | {result['rss_mib']:.0f} MiB | "
                        f"{result['workloads']} | {result['actionable']} | {result['kills']} |"
                    )
                    log(line)
                    for seconds, what in result["slowest"][:4]:
                        log(f"    {seconds:.2f} s  {' '.join(what.split())[:140]}")
                    if result["failures"]:
                        log(f"    failed: {result['failures']}")
                    lines.append(line)
    shutil.rmtree(folder, ignore_errors=True)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000", help="vLLM pods per fleet, comma separated")
    parser.add_argument("--concurrency", default="4", help="requests in flight, comma separated")
    parser.add_argument("--runs", type=int, default=2, help="runs per concurrency (the first one reads cold blocks)")
    parser.add_argument("--compare", help="another checkout of obspack to run against the same servers (before/after)")
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    for tool in ("prometheus", "promtool"):
        if not find_tool(tool):
            log(f"error: {tool} not found on PATH")
            return 1
    work = Path(tempfile.mkdtemp(prefix="obspack-rightsize-bench-"))
    lines = [
        "| pods | samples | checkout | concurrency | run | rightsize | requests | peak RSS | workloads | with changes or risks | backtests that kill |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    try:
        for pods in (int(s) for s in args.sizes.split(",")):
            lines += run_size(pods, args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
