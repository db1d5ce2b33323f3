"""The "Fleet scale" section of docs/benchmarks.md, from the fleet benchmark's results.

`section(...)` renders Markdown; `write_section(path, text)` replaces only that section of the file (other
sections, e.g. "Render" and "Exporter", stay as they are); `as_json`/`from_json` keep the raw numbers,
so the section can be rendered again without running the benchmark
(`python benchmarks/fleet_bench.py --from-json results.json`).
"""

from __future__ import annotations

import dataclasses
import math
import platform
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from obspack import durations

TITLE = "## Fleet scale"
TARGET_MS = 250.0
GROUP_TARGET_S = 1.0


# ---------------------------------------------------------------------------------------------------
# Numbers in and out


def as_json(results: list[Any], settings: Any, total_s: float, lags: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "settings": dataclasses.asdict(settings),
        "total_s": total_s,
        "machine": machine(),
        "when": time.strftime("%Y-%m-%d"),
        "sizes": [dataclasses.asdict(r) for r in results],
        "lags": lags,
    }


def from_json(data: dict[str, Any]) -> tuple[list[Any], Any, float, dict[str, Any]]:
    """The numbers `as_json` wrote; keys this version does not know (e.g. an older run's) are dropped."""
    from benchmarks.fleet_bench import Settings, SizeResult, Timed

    def known(cls: Any, values: dict[str, Any]) -> dict[str, Any]:
        names = {f.name for f in dataclasses.fields(cls)}
        return {k: v for k, v in values.items() if k in names}

    timed = ("variables", "targets", "naive")
    results = []
    for size in data["sizes"]:
        result = SizeResult(**known(SizeResult, {k: v for k, v in size.items() if k not in timed}))
        for name in timed:
            setattr(result, name, {k: Timed(**known(Timed, v)) for k, v in size.get(name, {}).items()})
        result.slowest_rule = {g: tuple(v) for g, v in result.slowest_rule.items()}
        if not result.live_cpu_s:  # an older run's "live" groups read backfilled blocks, maybe stale: not shown
            result.rule_groups, result.slowest_rule, result.rule_interval = {}, {}, ""
        results.append(result)
    return results, Settings(**known(Settings, data["settings"])), data["total_s"], data


def machine() -> str:
    cpu = ""
    try:
        cpu = re.search(r"model name\s*:\s*(.*)", Path("/proc/cpuinfo").read_text()).group(1)  # type: ignore[union-attr]
    except (OSError, AttributeError):
        pass
    try:
        version = subprocess.run(["prometheus", "--version"], capture_output=True, text=True).stdout.split(
            "\n"
        )[0]
    except OSError:
        version = "prometheus ?"
    import os

    return f"{os.cpu_count()} cores ({cpu or platform.machine()}), {version.strip()}"


def write_section(path: Path, text: str) -> None:
    """Replace the Fleet scale section of `path` (create the file with a title if needed)."""
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^{re.escape(TITLE)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(old):
        new = pattern.sub(lambda _: text.rstrip("\n") + "\n\n", old).rstrip("\n") + "\n"
    else:
        new = old.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n"
    path.write_text(new)


# ---------------------------------------------------------------------------------------------------
# Formatting


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.1f}" if ms < 10 else f"{ms:.0f}"


def _cell(t: Any, runs: int) -> str:
    if t is None:
        return ""
    if t.error:
        return "error"
    if t.timed_out:
        return f"> {_ms(t.seconds[-1])}"
    if not t.seconds:
        return ""
    text = f"{_ms(t.p50)} / {_ms(t.max)}"
    if len(t.seconds) < runs:
        text += f" ({len(t.seconds)})"
    return f"**{text}**" if t.p50 * 1000 > TARGET_MS else text


def _growth(a: float | None, b: float | None, lower_bound: bool = False) -> str:
    if not a or not b or math.isnan(a) or math.isnan(b):
        return ""
    return f"{'> ' if lower_bound else ''}×{b / a:.1f}"


def _p50(t: Any) -> float | None:
    return t.p50 if t is not None and t.seconds and not t.error else None


def _growths(values: list[Any]) -> str:
    """Growth of the p50 per size step, e.g. `×1.2, ×9.8`."""
    out = []
    for a, b in zip(values, values[1:]):
        out.append(_growth(_p50(a), _p50(b), lower_bound=bool(b is not None and b.timed_out)))
    return ", ".join(g for g in out if g)


def _median(values: list[float] | None) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def _group_cell(values: list[float] | None, alone: float | None) -> str:
    """`alone` (the goal's figure, bold when over it), then the live p50 / max where measured."""
    text = "" if alone is None else f"**{alone:.3f}**" if alone > GROUP_TARGET_S else f"{alone:.3f}"
    p50 = _median(values)
    if p50 is not None and values:
        text += f" (live {p50:.3f} / {max(values):.3f})"
    return text


def _group_rows(results: list[Any]) -> list[list[str]]:
    big = results[-1]
    rows = []
    for g in big.alone:
        values = [r.rule_groups.get(g) for r in results]
        alones = [r.alone.get(g) for r in results]
        growth = ", ".join(x for x in (_growth(a, b) for a, b in zip(alones, alones[1:])) if x)
        slow = big.slowest_rule.get(g)
        rows.append([g, *[_group_cell(v, a) for v, a in zip(values, alones)], growth,
                     f"{slow[1]} ({slow[0]:.3f} s)" if slow else ""])  # fmt: skip
    # The load on the server: every group's cost added up (the work of one evaluation round).
    totals = [sum(r.alone.values()) for r in results]
    growth = ", ".join(x for x in (_growth(a, b) for a, b in zip(totals, totals[1:])) if x)
    rows.append(["**all groups, alone, added up**", *[f"{t:.3f}" for t in totals], growth, ""])
    live = [sum(_median(v) or 0.0 for v in r.rule_groups.values()) for r in results]
    if any(live):
        rows.append(["**all groups, live, added up**", *[f"{t:.3f}" if t else "" for t in live], "", ""])
    return rows


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# The section


def _summary(results: list[Any]) -> list[str]:
    """A few sentences computed from the numbers: misses, growth, load."""
    big, first = results[-1], results[0]
    n = big.pods
    slow = [k for k, t in big.targets.items() if t.timed_out or (_p50(t) or 0) * 1000 > TARGET_MS]
    worst = max(big.targets.items(), key=lambda kv: _p50(kv[1]) or 0)
    timeouts = sum(1 for t in big.targets.values() if t.timed_out)
    growth = sorted(
        (_p50(big.targets[k]) or 0) / (_p50(first.targets[k]) or 1)
        for k in big.targets
        if k not in slow and first.targets.get(k) is not None
    )
    lines = [
        f"- At {n} pods, {len(slow)} of {len(big.targets)} dashboard targets miss {TARGET_MS:.0f} ms at p50; "
        f"the slowest is {worst[0]} at {(_p50(worst[1]) or 0) * 1000:.0f} ms."
    ]
    for r in results:
        unused = set(getattr(r, "unused_targets", []))
        empty = sorted(k for k, t in r.targets.items() if t.seconds and not t.series and k not in unused)
        lines.append(
            f"- At {r.pods} pods, {len(empty)} of {len(r.targets) - len(unused)} targets return no data"
            + (f" ({'; '.join(empty)})" if empty else "")
            + (f"; feature rows not in use (their variable counts no engine): {len(r.rows_unused)}" if r.rows_unused else "")
            + "."
        )
    if len(results) > 1 and growth:
        lines.append(
            f"- From {first.pods} to {n} pods ({n // first.pods}x the fleet) the p50 of the targets that pass "
            f"grows x{growth[len(growth) // 2]:.1f} (median) and at most x{growth[-1]:.1f}"
            + (f"; {timeouts} targets hit the query timeout at {n} pods." if timeouts else ".")
        )
    elif timeouts:
        lines.append(f"- {timeouts} targets hit the query timeout at {n} pods.")
    if big.alone:
        worst = max(big.alone, key=lambda g: big.alone[g])
        over = sum(1 for v in big.alone.values() if v > GROUP_TARGET_S)
        lines.append(
            f"- Rule groups at {n} pods, each alone: the slowest is {worst.split(': ', 1)[1]} at "
            f"{big.alone[worst]:.2f} s; {over} of {len(big.alone)} groups {'takes' if over == 1 else 'take'} more than "
            f"{GROUP_TARGET_S:.0f} s."
        )
    records = sum(big.record_series.values())
    per = _series_by_level(big)
    lines.append(
        f"- The recording rules add {records:,} series at {n} pods ({records / big.series:.1%} of the raw "
        f"{big.series:,}): {per['gpu'] / big.gpus:.2f} per GPU held, {per['pod'] / n:.1f} per pod, and "
        f"{per['model']:,} per model and cluster in all ({records / n:.1f} per pod, {records / big.gpus:.2f} "
        "per GPU overall)."
    )
    if big.alone:
        lines.append(
            f"- One evaluation round of every group costs {sum(big.alone.values()):.2f} s of query time at {n} "
            "pods (each group alone, added up)."
        )
    if big.rule_groups:
        live = sum(_median(v) or 0 for v in big.rule_groups.values())
        worst = max(big.rule_groups, key=lambda g: _median(big.rule_groups[g]) or 0)
        every = f"{_seconds(big.rule_interval):g} s"
        scrapes = ", ".join(f"{source} {seconds:.2g} s" for source, seconds in sorted(big.scrape_s.items()))
        lines.append(
            f"- Live, scraping the fleet every {every} ({big.head_series:,.0f} series in the head; the last scrapes "
            f"took {scrapes}{'' if big.failed_scrapes < 0 else f'; {big.failed_scrapes} failed'}) and evaluating every group at the same interval, "
            f"Prometheus used {big.live_cpu_s:.1f} s of CPU per {every} ({big.live_cpu_s / _seconds(big.rule_interval):.0%} of "
            f"one core)"
            + (
                f", against {big.scrape_cpu_s:.1f} s for the scrapes alone before the rules were loaded: the pack "
                f"costs {big.live_cpu_s - big.scrape_cpu_s:.1f} s of CPU per {every}"
                if big.scrape_cpu_s else ""
            )
            + f". Evaluations missed: {big.missed_iterations:.0f}. The groups' durations added up to "
            f"{live:.2f} s per round; the slowest, {worst.split(': ', 1)[1]}, took {_median(big.rule_groups[worst]):.2f} s "
            "sharing the cores with the others and the scrapes."
            + (f" The records had {big.live_record_series:,} series there." if big.live_record_series else "")
        )
    elif big.live_error:
        lines.append(f"- The live rule groups were not measured: {big.live_error}")
    return lines


def _seconds(interval: str) -> float:
    return durations.parse_ms(interval) / 1000


def _level(record: str) -> str:
    """Which fleet dimension a record grows with, from its level (`namespace_pod_model_gpu:...`)."""
    level = record.split(":", 1)[0]
    return "gpu" if level.endswith("_gpu") else "pod" if "_pod" in level else "model"


def _series_by_level(result: Any) -> dict[str, int]:
    out = {"gpu": 0, "pod": 0, "model": 0}
    for record, count in result.record_series.items():
        out[_level(record)] += count
    return out


def _lags(lags: list[dict[str, Any]]) -> list[str]:
    from obspack.demo.lag import Lag, table

    if not lags:
        return []
    interval = lags[0]["interval_s"]
    known = {f.name for f in dataclasses.fields(Lag)}
    parsed = [Lag(**{k: v for k, v in lag.items() if k in known}) for lag in lags]
    late = [lag for lag in parsed if not lag.on_time]
    return [
        "### Alert lag on a live Prometheus",
        "",
        f"The e2e incidents (obspack/demo: the engine incident, then the memory planes with a pod appearing "
        f"midway) on a live Prometheus and Alertmanager scraping and evaluating every {interval} s, with the "
        "demo config's short `for`. Lag = the evaluation that fired the alert (its first "
        "`ALERTS{alertstate=\"firing\"}` sample) minus the moment the fake exporters began to show the "
        "condition (for VLLMZeroThroughput, the stall plus its window). Budget: `for` + 2 evaluation "
        "intervals + 1 scrape interval, which an alert one rule-group hop from raw series always meets.",
        "",
        table(parsed, interval),
        "",
        f"{len(parsed) - len(late)} of {len(parsed)} alerts on time; the largest margin used: "
        f"{max(lag.seconds - lag.for_s for lag in parsed):.1f} s over `for` (budget {3 * interval} s).",
        "",
    ]


def section(results: list[Any], settings: Any, total_s: float, meta: dict[str, Any] | None = None) -> str:
    meta = meta or {"machine": machine(), "when": time.strftime("%Y-%m-%d")}
    sizes = [r.pods for r in results]
    heads = [f"{p} pods" for p in sizes]
    runs = settings.runs
    big = results[-1]
    growth_column = len(results) > 1  # growth per size step: none with one size
    out = [TITLE, ""]
    out.append(
        f"`python benchmarks/fleet_bench.py` ({meta['when']}, {meta['machine']}; "
        f"whole run **{total_s:.0f} s**). Not part of CI."
    )
    out.append("")
    out.append(
        f"Each fleet is obspack/demo/fleet.py's synthetic fleet (two clusters; vLLM V1 and V0 pods with full "
        f"histograms, router copies, cAdvisor, HA kube-state-metrics, DCGM in both label modes, exporter "
        f"series; {settings.duration_s // 60} min at a {settings.scrape_s} s scrape interval), with every "
        f"pod holding {settings.gpus_per_pod} GPUs (TP {settings.gpus_per_pod}, or two data-parallel engines "
        f"of TP {settings.gpus_per_pod // 2}; each node also reports one idle GPU). It is backfilled with "
        "`promtool tsdb create-blocks-from openmetrics`, the rendered recording rules with "
        "`create-blocks-from rules` (at a 60 s evaluation interval, Prometheus's default), and served by a "
        "real Prometheus on 127.0.0.1."
    )
    out.append("")
    from benchmarks.fleet_bench import QUERY_TIMEOUT_S, REPEAT_BUDGET_S

    out.append(
        f"- **Panels**: every target of the rendered dashboards as Grafana sends it on first load: variables "
        f"All (or the first value where a variable has no All), range queries over the whole span at "
        f"step {settings.step_s} s (`$__rate_interval` = "
        f"{max(settings.step_s + settings.scrape_s, 4 * settings.scrape_s)} s), tables as instant queries at "
        f"the end. Time = HTTP round trip including JSON, in ms, **p50 / max** of {runs} runs in rounds; "
        f"(n) = fewer runs (a query stops repeating after {REPEAT_BUDGET_S:g} s in total); "
        f"`> {QUERY_TIMEOUT_S * 1000:.0f}` = hit the {QUERY_TIMEOUT_S:g} s query timeout (10x the target); "
        f"**bold** = p50 over the {TARGET_MS:.0f} ms target."
        + (" Growth = p50 ratio per size step (linear in the fleet would be ×10 per step)." if growth_column
           else "")
    )  # fmt: skip
    out.append(
        "- **Rule groups**: each group alone (the goal's figure): its rules evaluated one after the other as "
        "instant queries at the last sample of the backfilled fleet on an otherwise idle server, `evalTotalTime` "
        f"added up; the median of {runs} passes over every group."
        + (
            " Live (largest size): a Prometheus scrapes the same fleet, served one snapshot per scrape, and "
            "evaluates the rendered rule files at the scrape interval, as a user's server does (data in its "
            "head, scrapes and all groups sharing the cores); read once every [5m] window is full "
            "(benchmarks/fleet_live.py)."
            if any(r.rule_groups for r in results) else ""
        )
    )
    out.append(
        "- The panels and the groups alone read backfilled blocks, not a live server's head; docs/benchmarks.md "
        '("Round 5: the rule groups live") compares the two for every group.'
    )
    out.append(
        "- Every time depends on the machine: on shared cores the same pass can take up to 1.8 times as long a "
        "few minutes later. `--kept` times a kept fleet again, on the same machine or on another one. "
        'docs/benchmarks.md ("Round 13: the goals on a server CPU") compares a 16-core server with 2 cores.'
    )
    out.append("")

    out += ["### Summary", "", *_summary(results), "", "### Fleets", ""]
    rows = []
    for r in results:
        rows.append(
            [
                str(r.pods),
                f"{r.gpus:,}",
                f"{r.series:,}",
                f"{r.samples / 1e6:.1f} M",
                f"{r.text_bytes / 1e9:.2f} GB",
                *(f"{r.phases[phase]:.0f} s" if phase in r.phases else "kept"  # --kept: made by an earlier run
                  for phase in ("generate + backfill", "backfill recording rules")),
                f"{r.phases['rule evaluation']:.0f} s" if "rule evaluation" in r.phases and r.rule_groups else "",
                f"{r.phases.get('queries', 0):.0f} s",
                f"{r.live_cpu_s:.1f} s" if r.rule_groups else "",
            ]
        )
    out.append(
        _table(
            ["pods", "GPUs", "raw series", "samples", "OpenMetrics", "generate + backfill", "backfill rules",
             "live rules", "queries", "live Prometheus CPU per interval"],
            rows,
        )
    )  # fmt: skip
    out.append("")

    # Panels, per dashboard
    out += ["### Dashboard panels", ""]
    keys = list(big.targets)
    by_dashboard: dict[str, list[str]] = {}
    for key in keys:
        by_dashboard.setdefault(key.split(" / ", 1)[0], []).append(key)
    for dashboard, dkeys in by_dashboard.items():
        out += [f"#### {dashboard}", ""]
        rows = []
        for key in dkeys:
            values = [r.targets.get(key) for r in results]
            row = [key.split(" / ", 1)[1]] + [_cell(v, runs) for v in values]
            rows.append(row + [_growths(values)] if growth_column else row)
        out.append(_table(["panel [target]", *heads, *(["growth"] if growth_column else [])], rows))
        out.append("")
    var_rows = []
    for key in big.variables:
        values = [r.variables.get(key) for r in results]
        var_rows.append([key, *[_cell(v, 1) for v in values]])
    out += ["Variables (`label_values`, one run):", "", _table(["variable", *heads], var_rows), ""]

    # Rule groups
    out += ["### Rule groups", ""]
    live = next((r for r in results if r.rule_groups), None)
    out.append(
        "Seconds per evaluation of each group alone: its rules as instant queries at the last sample on an "
        f"idle server (`evalTotalTime`, added up); **bold** = over {GROUP_TARGET_S:.0f} s."
        + (
            f" In brackets, at {live.pods} pods, live: p50 / max of `prometheus_rule_group_last_duration_seconds` "
            f"over {settings.evaluations} evaluations of a Prometheus that scrapes the fleet every "
            f"{_seconds(live.rule_interval):g} s and evaluates every group at that interval (all sharing the cores)."
            if live else ""
        )
    )
    out.append("")
    header = ["group", *heads, "growth", f"slowest rule at {sizes[-1]} pods"]
    rows = _group_rows(results)
    if not growth_column:
        header.remove("growth")
        rows = [row[:-2] + row[-1:] for row in rows]
    out += [_table(header, rows), ""]

    # Series added
    out += ["### Series added by the recording rules", ""]
    rows = []
    for record in big.record_series:
        rows.append([f"`{record}`", _level(record), *[f"{r.record_series.get(record, 0):,}" for r in results]])
    totals = [sum(r.record_series.values()) for r in results]
    rows.append(["**total**", "", *[f"**{t:,}** ({t / r.series:.1%} of raw)" for t, r in zip(totals, results)]])
    out.append(_table(["record", "one series per", *heads], rows))
    out.append("")

    out += _lags(meta.get("lags", []))

    # Naive vs obspack
    from benchmarks.fleet_queries import NAIVE

    out += ["### Naive queries vs obspack", ""]
    out.append(
        "The same question asked without obspack's recording rules (raw histograms across the fleet, "
        "unaggregated cAdvisor/kube-state-metrics/DCGM joins), in the same rounds on the same server."
    )
    out.append("")
    rows = []
    for naive in NAIVE:
        key = f"{naive.obspack[0]} / {naive.obspack[1]} [{naive.obspack[2]}]"
        nv = [r.naive.get(naive.question) for r in results]
        ob = [r.targets.get(key) for r in results]
        speed = ""
        if _p50(nv[-1]) and _p50(ob[-1]):
            lower = "> " if nv[-1].timed_out else ""
            ratio = _p50(nv[-1]) / _p50(ob[-1])  # type: ignore[operator]
            speed = f"{lower}×{ratio:.1f}" if ratio < 10 else f"{lower}×{ratio:.0f}"
        rows.append([naive.question, *[_cell(v, runs) for v in nv], *[_cell(v, runs) for v in ob], speed])
    out.append(
        _table(
            ["question", *[f"naive {h}" for h in heads], *[f"obspack {h}" for h in heads],
             f"naive / obspack at {sizes[-1]} pods"],
            rows,
        )
    )  # fmt: skip
    out.append("")

    # Misses
    out += ["### Misses at " + f"{sizes[-1]} pods", ""]
    out.append(
        f"Panels over the {TARGET_MS:.0f} ms p50 target and rule groups over {GROUP_TARGET_S:.0f} s "
        f"at {sizes[-1]} pods:"
    )
    out.append("")
    misses = []
    for key, t in big.targets.items():
        p = _p50(t)
        if t.timed_out or (p is not None and p * 1000 > TARGET_MS):
            misses.append([f"panel {key}", f"{_cell(t, runs)} ms"])
    for g, alone in big.alone.items():
        if alone > GROUP_TARGET_S:
            misses.append([f"rule group {g.split(': ', 1)[1]}, alone", f"{alone:.3f} s"])
    out.append(_table(["what", "time"], misses) if misses else "None.")
    out.append("")
    return "\n".join(out)
