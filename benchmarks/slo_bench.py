"""SLO benchmark: what the SLO rules cost on a real Prometheus at 1,000 vLLM pods, with a month of record history.

    python benchmarks/slo_bench.py              # 1000 pods; prints the section
    python benchmarks/slo_bench.py --write      # and writes it into docs/benchmarks.md ("SLOs")
    python benchmarks/slo_bench.py --pods 100   # a quicker look

What it builds, in a temporary folder:
1. Thirty days of history of the base-window SLO records (errors, events and requests per cluster,
   namespace, model and SLO) at a 60 s evaluation interval, ending shortly before the fleet starts: what
   a Prometheus that has run the rules for a month holds. The longer windows and the period read it.
2. The vLLM families the SLO rules read, from the synthetic fleet (obspack/demo/fleet.py: two clusters,
   V1 and V0 pods, data-parallel engines, every histogram bucket, the API server's http_requests_total,
   router copies), for 15 minutes at a 30 s scrape interval, written last so that it ends about a
   minute before the rules start.
Both are backfilled with promtool (the history in 24 h blocks, as compaction would leave it), then a
Prometheus loads only the SLO groups (recording and alert, every group at a 10 s interval) and reports
each group's `prometheus_rule_group_last_duration_seconds` over a few evaluations, the slowest rule of
each, each rule alone as an instant query, and the series the records add.

Not part of CI: about three minutes on 2 cores; needs `prometheus` and `promtool` on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.fleet_bench import log  # noqa: E402
from benchmarks.fleet_live import rule_group_metrics  # noqa: E402
from obspack import conventions as c  # noqa: E402
from obspack import slos  # noqa: E402
from obspack.config import ObspackConfig  # noqa: E402
from obspack.demo import fleet  # noqa: E402
from obspack.demo.fleet import FleetSpec  # noqa: E402
from obspack.demo.processes import find_tool  # noqa: E402
from obspack.demo.prometheus import backfill_openmetrics, running_prometheus  # noqa: E402
from obspack.pack import build  # noqa: E402

HISTORY_S = 30 * 86400
HISTORY_STEP_S = 60
INTERVAL = "10s"
EVALUATIONS = 3
RAW_SERIES_1000 = 316_750  # the whole synthetic fleet at 1,000 pods (docs/benchmarks.md, "Fleet scale")
SECTION = "## SLOs"
RULE_LIMIT_S = 50.0  # stop reading live rule evaluations after this long


def measure_rule_groups(data: Path, rule_files: list[Path], evaluations: int) -> dict[str, Any]:
    """Each group's evaluation durations (the server's own metric) over `evaluations` evaluations after
    a warm-up one."""
    durations: dict[str, list[float]] = {}
    seen: dict[str, float] = {}
    slowest_rule: dict[str, tuple[float, str]] = {}
    with running_prometheus(data, rule_files=rule_files) as prom:
        started = time.monotonic()
        while time.monotonic() - started < RULE_LIMIT_S:
            time.sleep(0.5)
            latest = rule_group_metrics(prom.url)
            for group, values in latest.items():
                stamp = values.get("last_evaluation_timestamp_seconds", 0.0)
                if stamp > 0 and stamp != seen.get(group):
                    # The first evaluation is a warm-up: it creates every record's series in the head.
                    if group in seen:
                        durations.setdefault(group, []).append(values["last_duration_seconds"])
                    seen[group] = stamp
            if latest and all(len(durations.get(g, [])) >= evaluations for g in latest):
                break
        for group in prom.get("rules")["groups"]:  # unchecked: the shape drops each rule's evaluationTime
            rules = sorted(group["rules"], key=lambda r: -r.get("evaluationTime", 0))
            if rules:
                name = rules[0].get("name", "")
                slowest_rule[f"{Path(group['file']).name}: {group['name']}"] = (
                    rules[0]["evaluationTime"],
                    name,
                )
    for leftover in ("wal", "chunks_head"):  # this server's rule results at "now": not part of the fleet
        shutil.rmtree(data / leftover, ignore_errors=True)
    return {"durations": durations, "slowest_rule": slowest_rule}


def write_fleet(spec: FleetSpec, path: Path) -> tuple[int, int, list[tuple[str, str, str]]]:
    """The vLLM source of the fleet (gauges, counters with HTTP, histograms); its model-namespaces."""
    f = fleet._Fleet(spec)
    with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
        w = fleet._Writer(out, fleet._stamps(spec))
        for section in fleet.SOURCES["vllm"]:
            getattr(f, section)(w)
        out.write("# EOF\n")
    models = sorted({(p.cluster, p.namespace, p.model) for p in f.pods})
    return w.count, w.samples, models


def write_history(models: list[tuple[str, str, str]], end: int, path: Path) -> int:
    """A month of the base-window records, one sample a minute, ending at `end` (exclusive)."""
    window = slos.base_window(ObspackConfig())
    stamps = range(end - HISTORY_S, end, HISTORY_STEP_S)
    count = 0
    with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
        for metric, value in (("errors", 0.02), ("events", 5.0), ("requests", 5.0)):
            name = c.slo_rate(metric, window)
            out.write(f"# TYPE {name} gauge\n")
            for cluster, namespace, model in models:
                for sli in slos.SLIS:
                    scale = 40.0 if sli == "inter_token_latency" and metric == "events" else 1.0
                    labels = f'cluster="{cluster}",model_name="{model}",namespace="{namespace}",slo="{sli}"'
                    out.write("".join(f"{name}{{{labels}}} {value * scale} {t}\n" for t in stamps))
                    count += 1
        out.write("# EOF\n")
    return count


def slo_rule_files(out: Path) -> tuple[list[Path], list[dict[str, Any]]]:
    pack = build(ObspackConfig())
    recording = [g.to_dict() for g in pack.recording_groups if "-slo" in g.name]
    alerts = [g.to_dict() for g in pack.alert_groups if "-slo" in g.name]
    files = []
    for name, groups in (("slo-rules.yaml", recording), ("slo-alerts.yaml", alerts)):
        path = out / name
        path.write_text(
            yaml.safe_dump({"groups": [{**g, "interval": INTERVAL} for g in groups]}, sort_keys=False)
        )
        files.append(path)
    return files, recording + alerts


def instant(url: str, expr: str, at: float) -> tuple[float, int]:
    """Seconds of the HTTP round trip (median of three) and the samples the query touched."""
    body = urllib.parse.urlencode({"query": expr, "time": at, "stats": "all"}).encode()
    times, samples = [], 0
    for _ in range(3):
        started = time.perf_counter()
        with urllib.request.urlopen(f"{url}/api/v1/query", data=body, timeout=120) as response:
            raw = response.read()
        times.append(time.perf_counter() - started)
        stats = json.loads(raw)["data"].get("stats", {})
        samples = int(stats.get("samples", {}).get("totalQueryableSamples", 0))
    return statistics.median(times), samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000, help="vLLM pods in all (two clusters)")
    parser.add_argument("--write", action="store_true", help="write the section into docs/benchmarks.md")
    args = parser.parse_args()
    if not (find_tool("prometheus") and find_tool("promtool")):
        raise SystemExit("prometheus and promtool are needed on PATH")
    started = time.monotonic()
    spec = FleetSpec(pods=args.pods // 2, duration_s=900, step_s=30)
    with tempfile.TemporaryDirectory(prefix="obspack-slo-bench-") as tmp:
        root = Path(tmp)
        # The history first: the fleet written last ends about now when the rules start, so the
        # base-window rules find fresh raw samples (a 5m window over samples older than 5m is empty).
        models = sorted({(p.cluster, p.namespace, p.model) for p in fleet.fleet_pods(spec)})
        log(f"writing 30 days of SLO record history for {len(models)} model-namespaces")
        history = write_history(models, spec.first - 600, root / "history.om")
        backfill_openmetrics(root / "history.om", root / "data", max_block="24h")
        (root / "history.om").unlink()
        spec = FleetSpec(pods=args.pods // 2, duration_s=900, step_s=30)  # ends a minute before now
        log(f"writing the vLLM families of {args.pods} pods")
        raw_series, raw_samples, _ = write_fleet(spec, root / "vllm.om")
        log(f"{raw_series:,} series, {raw_samples / 1e6:.1f} M samples; backfilling")
        backfill_openmetrics(root / "vllm.om", root / "data")
        (root / "vllm.om").unlink()
        files, groups = slo_rule_files(root)
        log("evaluating the SLO groups live")
        live = measure_rule_groups(root / "data", files, EVALUATIONS)
        log("each rule alone, and the series")
        alone: list[tuple[str, str, float, int]] = []
        with running_prometheus(root / "data", rule_files=files) as prom:
            time.sleep(25)  # two evaluations: the records' newest samples exist
            at = time.time()
            for group in groups:
                for rule in group["rules"]:
                    name = rule.get("record") or rule.get("alert")
                    seconds, samples = instant(prom.url, rule["expr"], at)
                    alone.append((group["name"], name, seconds, samples))
            series = {
                r["metric"]["__name__"]: int(float(r["value"][1]))
                for r in prom.query('count by (__name__) ({__name__=~"namespace_model_slo:.*"})', at)
            }
            base = c.slo_rate("events", slos.base_window(ObspackConfig()))
            if series.get(base, 0) != len(models) * len(slos.SLIS):
                raise SystemExit(
                    f"{base}: {series.get(base)} series, not one per model and SLO: stale raw data?"
                )
    total = time.monotonic() - started
    load = os.getloadavg()[1]  # the cores are shared: other work running beside inflates the figures
    text = report(args.pods, raw_series, history, models, live, alone, series, total, load)
    print(text)
    if args.write:
        path = ROOT / "docs" / "benchmarks.md"
        doc = path.read_text()
        head, _, rest = doc.partition(f"\n{SECTION}\n")
        tail = rest[rest.find("\n## ") :] if "\n## " in rest else ""
        path.write_text(f"{head}\n{text}{tail}")
        log(f"wrote {path}")


def report(pods: int, raw_series: int, history: int, models: list[tuple[str, str, str]], live: dict[str, Any],
           alone: list[tuple[str, str, float, int]], series: dict[str, int], total: float,
           load: float) -> str:  # fmt: skip
    added = sum(series.values())
    per_model = added / len(models)
    lines = [
        SECTION,
        "",
        f"`python benchmarks/slo_bench.py --pods {pods}` ({time.strftime('%Y-%m-%d')}, 2 cores, 5-minute load "
        f"average {load:.1f} at the end; whole run **{total:.0f} s**). Not part of CI. The vLLM families the SLO rules read ({raw_series:,} series: every "
        "histogram bucket, the API server's `http_requests_total`, router copies; 15 min at a 30 s scrape "
        f"interval) of {pods} synthetic pods in two clusters, plus 30 days of the base-window SLO records "
        f"({history} series at 60 s), backfilled; then a Prometheus evaluates only the SLO groups every {INTERVAL}.",
        "",
        "### Series added",
        "",
        f"- **{added:,}** series for {len(models)} cluster/namespace/model combinations: {per_model:.0f} per "
        "model (15 per SLO: base-window errors, events and requests; objective and guard; errors and events "
        "over the page's long windows, 1h, 6h, 1d and 3d, and the period). They grow with models, never with pods.",
        f"- Against the whole synthetic fleet at 1,000 pods ({RAW_SERIES_1000:,} raw series): "
        f"{added / RAW_SERIES_1000:.2%}.",
        "",
        "### Evaluation",
        "",
        "p50 / max of `prometheus_rule_group_last_duration_seconds` over "
        f"{EVALUATIONS} evaluations after a warm-up one (all SLO groups loaded together); alone: every rule "
        "as an instant query, the HTTP round trip summed (median of three runs), and the samples it touched.",
        "",
        "| group | live p50 / max (s) | alone (s) | samples touched | slowest rule alone |",
        "|---|---|---|---|---|",
    ]
    for group in dict.fromkeys(g for g, *_ in alone):
        mine = [a for a in alone if a[0] == group]
        key = next((k for k in live["durations"] if k.endswith(f": {group}")), "")
        durations = live["durations"].get(key, [])
        live_text = f"{statistics.median(durations):.3f} / {max(durations):.3f}" if durations else "n/a"
        slowest = max(mine, key=lambda a: a[2])
        lines.append(
            f"| {group} | {live_text} | {sum(a[2] for a in mine):.3f} | {sum(a[3] for a in mine):,} | "
            f"`{slowest[1]}` ({slowest[2] * 1000:.0f} ms) |"
        )
    lines += [
        "",
        "The base-window rules read only the threshold bucket and the count of each histogram (two series per "
        "engine), not the whole histogram; every longer window and the period read the records' own history "
        "(a few dozen series), so their cost follows the number of models and the window length, not the pods.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
