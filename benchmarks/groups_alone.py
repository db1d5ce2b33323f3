"""Each recording rule group alone, on another machine: carry a fleet's last minutes, then time the groups there.

    # where a fleet is served (fleet_bench.py --keep, or any Prometheus holding the fleet and its records):
    python benchmarks/groups_alone.py extract --url http://127.0.0.1:19090 --at 1795706103 --out fleet.om
    promtool tsdb create-blocks-from openmetrics fleet.om tsdb     # about 60 MB at 1,000 pods, 18 MB as .tgz
    # on the machine to measure, with `prometheus --storage.tsdb.path=tsdb` serving it:
    python benchmarks/groups_alone.py measure --url http://127.0.0.1:9090 --at 1795706103 --runs 5

`extract` writes, as OpenMetrics with timestamps, the last `--minutes` (16: a [5m] rate, its lookback and some
margin) of every series that the rendered recording rules read or write. `measure` evaluates each group's rules
one after the other as instant queries at `--at` and adds up Prometheus's own `evalTotalTime`, as the fleet
benchmark's "alone" column does, `--runs` times; it prints each group's median and fastest pass, and each rule's
with `--group`. It needs nothing but the standard library and PyYAML, so it runs where obspack is not installed.
Not part of CI.
"""

from __future__ import annotations

import argparse
import json
import statistics
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "generated" / "prometheus" / "recording-rules.yaml"


def _query(url: str, expr: str, at: float, stats: bool = False, timeout_s: float = 600) -> dict:
    fields = {"query": expr, "time": at, **({"stats": "all"} if stats else {})}
    data = urllib.parse.urlencode(fields).encode()
    with urllib.request.urlopen(f"{url}/api/v1/query", data=data, timeout=timeout_s) as r:
        answer = json.load(r)
    if answer["status"] != "success":
        raise SystemExit(f"{expr[:80]}: {answer.get('error')}")
    return answer["data"]


def eval_seconds(url: str, expr: str, at: float, timeout_s: float = 600) -> float:
    """Prometheus's own time to evaluate `expr` as an instant query at `at` (`evalTotalTime`)."""
    return float(_query(url, expr, at, stats=True, timeout_s=timeout_s)["stats"]["timings"]["evalTotalTime"])


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def extract(url: str, at: float, minutes: int, rules: Path, out: Path) -> None:
    from obspack.promql import metric_names  # only here: `measure` runs without obspack

    groups = yaml.safe_load(rules.read_text())["groups"]
    names = {n for g in groups for r in g["rules"] for n in metric_names(r["expr"])}
    names |= {r["record"] for g in groups for r in g["rules"]}
    samples = 0
    with out.open("w") as f:
        for name in sorted(names):
            series = _query(url, f'{{__name__="{name}"}}[{minutes}m]', at)["result"]
            for s in series:
                metric = s["metric"]
                metric_name = metric.pop("__name__")
                labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(metric.items()))
                for t, v in s["values"]:
                    f.write(f"{metric_name}{{{labels}}} {v} {t}\n")
                    samples += 1
        f.write("# EOF\n")
    print(f"{len(names)} metric names, {samples} samples -> {out}")


def measure(url: str, at: float, rules: Path, runs: int, group: str | None) -> None:
    for g in yaml.safe_load(rules.read_text())["groups"]:
        if group is not None and group not in g["name"]:
            continue
        passes: list[float] = []
        per_rule: dict[str, list[float]] = {}
        for _ in range(runs):
            total = 0.0
            for rule in g["rules"]:
                took = eval_seconds(url, rule["expr"], at)
                per_rule.setdefault(rule.get("record") or rule["alert"], []).append(took)
                total += took
            passes.append(total)
        if group is not None:
            for name, times in per_rule.items():
                print(f"  {min(times):.3f} s fastest  {statistics.median(times):.3f} s median  {name}")
        print(f"{statistics.median(passes):.3f} s median pass, {min(passes):.3f} s fastest ({runs} passes)  {g['name']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("extract", "measure"):
        p = sub.add_parser(name)
        p.add_argument("--url", required=True, help="the Prometheus serving the fleet")
        p.add_argument("--at", type=float, required=True, help="the evaluation time (the fleet's last sample)")
        p.add_argument("--rules", type=Path, default=RULES, help="the rendered recording rules")
    sub.choices["extract"].add_argument("--minutes", type=int, default=16)
    sub.choices["extract"].add_argument("--out", type=Path, required=True)
    sub.choices["measure"].add_argument("--runs", type=int, default=5)
    sub.choices["measure"].add_argument("--group", help="only the groups whose name contains this; per rule too")
    args = parser.parse_args()
    if args.command == "extract":
        extract(args.url, args.at, args.minutes, args.rules, args.out)
    else:
        measure(args.url, args.at, args.rules, args.runs, args.group)


if __name__ == "__main__":
    main()
