"""How long `obspack doctor` takes against a real Prometheus as the fleet grows.

    python benchmarks/doctor_bench.py                          # 100 and 1000 vLLM pods, 8 GPUs each
    python benchmarks/doctor_bench.py --sizes 1000 --concurrency 4,8,16

Each fleet is benchmarks/fleet_bench.py's (obspack/demo/fleet.py; two clusters; vLLM V1 and V0; router
copies; HA kube-state-metrics; DCGM in both label modes; every pod holding 8 GPUs), over 30 minutes at a
30 s scrape interval, backfilled with promtool into a Prometheus that loads the rendered rules and
evaluates them every 10 s while the doctor runs, as a production server would. The doctor checks the
default pack against it twice per concurrency:

- at a time before the server started, when no record exists yet: every recording rule is evaluated from
  its expression, with the records it reads written out (the worst case: rules not loaded, or another
  render's);
- now, once the records have data: records of rules that are the same as this render are read as they are.

It prints the wall time, the requests sent and what was found. Not part of CI: 1000 pods are about 19 M
samples and 7 GB of OpenMetrics text (deleted once backfilled). Needs `prometheus` and `promtool` on PATH.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.fleet_bench import backfill_fleet  # noqa: E402
from obspack.config import ObspackConfig  # noqa: E402
from obspack.demo.fleet import FleetSpec  # noqa: E402
from obspack.demo.processes import find_tool  # noqa: E402
from obspack.demo.prometheus import running_prometheus  # noqa: E402
from obspack.doctor.api import Connection  # noqa: E402
from obspack.doctor.run import Options, diagnose  # noqa: E402
from obspack.pack import build  # noqa: E402


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def wait_for_records(prom, names: list[str], interval_s: int, timeout_s: float = 300) -> int:  # noqa: ANN001
    """Until the number of the pack's records with data at "now" has not grown for two rule intervals."""
    deadline = time.monotonic() + timeout_s
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        present = len(prom.query(f'count by (__name__) ({{__name__=~"{"|".join(names)}"}})', time.time()))
        if present != seen:
            seen, since = present, time.monotonic()
        elif present and time.monotonic() - since > 2 * interval_s:
            break
        time.sleep(1)
    return seen


def run_size(pods: int, args: argparse.Namespace, work: Path) -> list[str]:
    cfg = ObspackConfig()
    pack = build(cfg)
    folder = work / f"pods-{pods}"
    data = folder / "data"
    data.mkdir(parents=True)
    # The data ends about when the server starts (generating and backfilling take ~0.1 s per pod), so the
    # rules it evaluates read fresh data and write their records "now".
    spec = FleetSpec(pods=pods // 2, duration_s=args.duration, step_s=30, end=int(time.time() + 0.09 * pods))
    started = time.perf_counter()
    summary, text_bytes, _ = backfill_fleet(spec, args.gpus_per_pod, folder, data)
    gpus = sum(len(p.gpus) for p in summary.pods)
    log(f"{len(summary.pods)} pods, {gpus} GPUs: {summary.series:,} series, {summary.samples:,} samples, "
        f"{text_bytes / 1e9:.1f} GB text, backfilled in {time.perf_counter() - started:.0f}s")  # fmt: skip
    rules = folder / "rules.yaml"
    groups = [g.to_dict() for g in pack.recording_groups + pack.alert_groups]
    rules.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    names = [r["record"] for g in groups for r in g["rules"] if "record" in r]
    lines = []
    with running_prometheus(data, rule_files=[rules], evaluation_interval=f"{args.interval}s") as prom:
        # Before the server started there are no records: every record is evaluated from its rule.
        modes = [("rules written out", summary.end - 300)]
        present = wait_for_records(prom, names, args.interval)
        log(f"{present} of {len(names)} records have data")
        modes.append(("records read", None))
        for mode, at in modes:
            for concurrency in args.concurrency:
                connection = Connection(prom.url, concurrency=concurrency, timeout_s=60)
                clock = time.perf_counter()
                report = diagnose(pack, connection, Options(at=at))
                seconds = time.perf_counter() - clock
                line = (
                    f"| {len(summary.pods)} | {gpus} | {summary.series:,} | {mode} | {concurrency} | "
                    f"{seconds:.1f} s | {report.requests} | {len(report.problems)} | {len(report.notes)} |"
                )
                log(line)
                log(f"  phases: {report.phases}")
                for seconds, what in report.slowest[:3]:
                    log(f"  {seconds:.2f}s {what[:150]}")
                for finding in report.findings:
                    log(
                        f"  {finding.level.value} {finding.topic.value} {finding.subject}: {finding.message[:160]}"
                    )
                lines.append(line)
    shutil.rmtree(folder, ignore_errors=True)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000", help="vLLM pods per fleet, comma separated")
    parser.add_argument("--concurrency", default="8", help="the doctor's --concurrency, comma separated")
    parser.add_argument("--duration", type=int, default=1800, help="seconds of data per fleet")
    parser.add_argument("--gpus-per-pod", type=int, default=8)
    parser.add_argument("--interval", type=int, default=10, help="the server's rule evaluation interval, s")
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    for tool in ("prometheus", "promtool"):
        if not find_tool(tool):
            log(f"error: {tool} not found on PATH")
            return 1
    work = Path(tempfile.mkdtemp(prefix="obspack-doctor-bench-"))
    lines = [
        "| pods | GPUs | raw series | records | concurrency | doctor | requests | problems | notes |",
        "|---|---|---|---|---|---|---|---|---|",
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
