"""The rightsize report: a table and a block per workload for a terminal, and the versioned JSON document
(docs/rightsize.md describes every field of schema `obspack.rightsize/v2`).

One convention everywhere: a size someone sets (a current or recommended request or limit) is printed as the
Kubernetes quantity the patch carries (`66.75Gi` in the table and in the patch); a measured size to two
decimals of a GiB; spans as durations (`14d`, `1d12h`); shares as percentages.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

from obspack.durations import format_ms
from obspack.numbers import text as number_text
from obspack.rightsize import patches
from obspack.rightsize.backtest import sentence
from obspack.rightsize.model import (
    GPU,
    Backtest,
    Decision,
    Knob,
    Level,
    LoadSource,
    Memory,
    ModelScaling,
    Release,
    Report,
    Risk,
    Saving,
    WhatIf,
    Workload,
    WorkloadCost,
)
from obspack.rightsize.prices import HOURS_PER_MONTH
from obspack.rightsize.sizing import PREFIX_FLAG, days, human_bytes, quantity

SCHEMA = "obspack.rightsize/v2"
Style = Callable[..., str]


def _plain(text: str, **_: object) -> str:
    return text


def _safe(text: str) -> str:
    """Label values come from the server: control characters (terminal escapes, newlines) are shown escaped."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _shown_url(url: str) -> str:
    """The URL without any user:password in it (the report may be pasted into a ticket)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _size(value: float | None) -> str:
    """A measured size."""
    return human_bytes(value) if value is not None else "-"


def _set(value: float | None) -> str:
    """A size someone sets: the exact quantity the patch carries."""
    return quantity(value) if value is not None else "none"


def _share(value: float | None) -> str:
    return f"{value:.0%}" if value is not None else "-"


def _cell(current: float | None, value: float | None, decision: Decision, level: Level) -> str:
    """`32Gi -> 32.25Gi`, `96Gi kept`, `16Gi (not sized)`."""
    if decision is Decision.CHANGE:
        return f"{_set(current)} -> {_set(value)}"
    if decision is Decision.KEEP:
        return f"{_set(current)} kept"
    why = "not sized" if level is Level.NONE else "no advice"
    return f"{_set(current) if current is not None else '-'} ({why})"


def risk_labels(w: Workload) -> list[str]:
    """Short names of the workload's risks, host memory first: what the RISKS column shows."""
    found = [w.memory.risk.value] if w.memory.risk in (Risk.OOM, Risk.HIGH, Risk.TIGHT) else []
    if w.gpu_risk and w.gpu is not None and w.gpu.peak_ratio is not None:
        found.append(f"GPU {w.gpu.peak_ratio:.0%}")
    if "KV cache too small" in w.risks:
        found.append("KV full")
    if w.release_risk:
        found.append("release")
    return found


# ---------------------------------------------------------------------------------------------------------
# Text


def text(report: Report, style: Style = _plain) -> str:
    r = report.rules
    lines = [
        style(f"obspack rightsize: {_safe(_shown_url(report.url))} ({_safe(report.backend)})", bold=True),
        f"window {format_ms(report.window_s * 1000)} to {_when(report.at)}, step {format_ms(report.step_s * 1000)}; "
        f"model load = the first {format_ms(report.load_s * 1000)} after each container start",
        f"rules: limit = highest peak x {1 + r.margin:g} (after an OOM kill, at least the limit it had x "
        f"{r.oom_factor:g}), never lowered without a model-load peak; request = serving p99 x {1 + r.margin:g}; "
        f"rounded up to {quantity(r.granule_bytes)}; values within {r.tolerance:.0%} are kept; every value is "
        "replayed against the window (backtest)",
        "",
    ]
    if report.workloads:
        lines += _table(report.workloads)
        for w in report.workloads:
            lines += ["", *_block(w, style, report.include_low, report.currency)]
    if report.what_if is not None:
        lines += ["", *_what_if_lines(report.what_if, style)]
    if report.scaling:
        lines += ["", *_scaling_lines(report.scaling, style, report.currency)]
    found = [*report.notes, *(f"could not measure {f.quantity}: {_safe(f.error)}" for f in report.failures)]
    if not report.workloads and report.selectors and not report.failures:
        found += [f"tried: {_safe(s)}" for s in report.selectors]
    if found:
        lines.append("")
        lines += [style(f"note: {n}", fg="yellow") for n in found]
    actionable = sum(1 for w in report.workloads if w.actionable)
    lines += [
        "",
        f"{len(report.workloads)} workload{'s' if len(report.workloads) != 1 else ''}, {actionable} with recommendations or risks; "
        f"{report.requests} requests in {report.elapsed_s:.1f} s; exit code {report.exit_code}",
    ]
    return "\n".join(lines)


def _table(found: tuple[Workload, ...]) -> list[str]:
    rows = [("WORKLOAD", "MEMORY LIMIT", "MEMORY REQUEST", "RISKS", "KV CACHE", "BACKTEST", "CONFIDENCE")]
    for w in found:
        m, level = w.memory, w.confidence.level
        rows.append(
            (
                _safe(w.key.title),
                _cell(m.current_limit, m.limit, m.limit_decision, level),
                _cell(m.current_request, m.request, m.request_decision, level),
                ", ".join(risk_labels(w)) or "-",
                w.gpu.verdict.value if w.gpu else "-",
                _backtest_cell(w.backtest),
                f"{days(w.confidence.span_s)} {level.value}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def _backtest_cell(bt: Backtest | None) -> str:
    if bt is None or bt.limit is None:
        return "-"
    peak = f", peak {bt.peak_ratio:.0%}" if bt.peak_ratio is not None else ""
    return f"{bt.runs_killed}/{bt.runs} runs, {bt.days_killed}/{bt.days} days killed{peak}"


def _block(w: Workload, style: Style, include_low: bool, currency: str = "") -> list[str]:
    head = f"{_safe(w.key.title)}{' (owner read from the pod name)' if w.owner_guessed else ''}"
    facts = [f"{w.pods} pod{'s' if w.pods != 1 else ''}"]
    if w.models:
        facts.insert(0, "model " + _safe(", ".join(w.models)))
    if not w.alive:
        facts.append("not running at the end of the window")
    lines = [style(head, bold=True) + "  " + ", ".join(facts)]
    lines += _memory_lines(w.memory, w.confidence.level)
    if w.backtest is not None:
        lines.append(f"  backtest    {_backtest_text(w.backtest)}")
    if w.gpu is not None:
        lines += _gpu_lines(w.gpu)
    lines += _knob_lines(w.knobs, w.confidence.level)
    lines += [f"  env         {name}={value} ({why})" for name, value, why in w.env]
    if w.cost is not None:
        lines += _cost_lines(w.cost, currency)
    if len(w.releases) > 1:
        lines += _release_lines(w.releases, style)
    c = w.confidence
    restarts = f"{c.restarts} restart{'s' if c.restarts != 1 else ''}"
    data = f"  data        {days(c.span_s)}, {c.points:,} samples, {restarts}: {c.level.value}"
    if c.level is not Level.HIGH:
        data += " (" + "; ".join(c.reasons) + ")"
    lines.append(style(data, fg="yellow") if c.level is Level.NONE else data)
    lines += _patch_lines(w, include_low)
    return lines


def _patch_lines(w: Workload, include_low: bool) -> list[str]:
    if not w.actionable:
        return []
    owners = patches.owner_patches((w,), include_low)
    lines = []
    for owner in owners:
        if owner.command:
            lines.append(f"  patch       {_safe(owner.command)}")
        elif owner.containers:
            changes = json.dumps(list(owner.containers), separators=(",", ":"), sort_keys=True)
            lines.append(f"  change      in {owner.where}: {_safe(changes)}")
        for container, flags in owner.args:
            lines.append(f"  vLLM args   set on {_safe(container)}: {' '.join(flags)}")
    if owners or not (w.changes or w.memory.change):
        return lines
    level = w.confidence.level
    if level is Level.NONE:
        return ["  patch       none: not enough data"]
    if level is Level.LOW and not include_low:
        return [f"  patch       withheld: low confidence ({'; '.join(w.confidence.reasons)}); --include-low writes it"]
    if not patches.kubernetes_names(w):
        return ["  patch       none: the namespace, name or container is not a name Kubernetes gives"]
    return lines


def _load_text(m: Memory) -> str:
    load = m.load
    if load.source is LoadSource.OBSERVED:
        return f"load peak {_size(load.peak)}"
    if load.source is LoadSource.UNSEEN:
        return "load peak not seen (no start in the window)" if m.split else "load not told apart"
    return f"load peak {_size(load.peak)} ({load.source.value}: {_safe(load.detail)})"


def _memory_lines(m: Memory, level: Level) -> list[str]:
    measured = (
        f"  host RAM    {_load_text(m)}; serving p99 {_size(m.serving_p99)}, peak {_size(m.serving_peak)}, "
        f"under traffic {_size(m.traffic_peak)}; {m.oom_kills} OOM kill{'s' if m.oom_kills != 1 else ''}"
    )
    risk = f"risk {m.risk.value}"
    if m.peak_to_limit is not None and m.risk is not Risk.OOM:
        risk += f" (peak at {m.peak_to_limit:.0%} of the limit)"
    return [
        measured,
        f"  limit       {_decision(m.current_limit, m.limit, m.computed_limit, m.limit_decision, m.limit_rule, m.limit_note, level)}; {risk}",
        f"  request     {_decision(m.current_request, m.request, m.computed_request, m.request_decision, m.request_rule, m.request_note, level)}",
    ]


def _decision(
    current: float | None, value: float | None, computed: float | None, decision: Decision, rule: str, note: str, level: Level
) -> str:
    if level is Level.NONE:
        return f"{_set(current)}: not enough data"
    if decision is Decision.CHANGE:
        return f"{_set(current)} -> {_set(value)} ({rule}; {note})"
    the_rule = f"the rule gives {quantity(computed)}: {rule}" if computed is not None else rule
    if decision is Decision.KEEP:
        return f"{_set(current)} kept ({note}; {the_rule})"
    return f"{_set(current)}: no advice ({note}; {the_rule})" if computed is not None else f"{_set(current)}: no advice ({note})"


def _backtest_text(bt: Backtest) -> str:
    if bt.limit is None:
        return "no limit to replay"
    text = sentence(bt, quantity(bt.limit))
    if bt.loads_unknown:
        runs = "1 run" if bt.loads_unknown == 1 else f"{bt.loads_unknown} runs"
        text += f"; {runs} started before the window with no model load in the data"
    if bt.request is not None:
        text += (
            f"; with {quantity(bt.request)} requested, the working set's p99 was above it on "
            f"{bt.days_over_request} of {bt.days} days"
        )
    return text


def _gpu_lines(g: GPU) -> list[str]:
    total = f" of {_size(g.framebuffer_total)}" if g.framebuffer_total else ""
    share = f" ({g.peak_ratio:.0%})" if g.peak_ratio is not None else ""
    util = f"--gpu-memory-utilization {g.gpu_memory_utilization:g}" if g.gpu_memory_utilization else "utilization unknown"
    waits = "capacity waits" if g.waits_by_reason else "waits"
    lines = [
        f"  GPU         framebuffer peak {_size(g.peak)}{share}, median {_size(g.median)}{total} ({util})",
        f"  KV cache    peak {_share(g.kv_peak)}, p99 {_share(g.kv_p99)}, {g.preemptions or 0:,.0f} preemptions, "
        f"{waits} {_share(g.waiting_share)} of the time: {g.verdict.value}",
    ]
    lines += [f"              {a}" for a in g.advice]
    return lines


def _argument(knob: Knob) -> str:
    value = knob.recommended
    if knob.flag == PREFIX_FLAG:
        return "--no-enable-prefix-caching" if value == "off" else PREFIX_FLAG
    return f"{knob.flag}={value:g}" if isinstance(value, float) else f"{knob.flag}={value}"


def _measured(name: str, value: float) -> str:
    """`prompt p99.9 1,900`, `hit rate 50%`: a knob's measurement as a person writes it."""
    label = name.replace("_p999", " p99.9").replace("_p99", " p99").replace("_", " ")
    if name.endswith(("_share", "_rate")):
        return f"{label} {value:.1%}"
    return f"{label} {value:,.0f}"


def _knob_lines(knobs: tuple[Knob, ...], level: Level) -> list[str]:
    if level is Level.NONE:
        measured = [_measured(name, value) for k in knobs for name, value in k.measured if math.isfinite(value)]
        return ["  vLLM        not enough data: no advice" + (f" (measured: {', '.join(measured)})" if measured else "")]
    lines = []
    for k in knobs:
        if k.recommended is None:
            lines.append(f"  vLLM        {k.flag}: nothing to suggest ({k.basis})")
        elif k.flag == PREFIX_FLAG and not k.change:
            lines.append(f"  vLLM        {PREFIX_FLAG}: keep it on ({k.basis})")
        elif k.change:
            now = f" (now {k.current:g})" if k.current is not None else f" (now {k.current_note})"
            lines.append(f"  vLLM        set {_argument(k)}{now}: {k.basis}")
        else:
            lines.append(f"  vLLM        {_argument(k)} suggested (current value {k.current_note}): {k.basis}")
    return lines


def _release_lines(releases: tuple[Release, ...], style: Style) -> list[str]:
    lines = []
    for r in releases:
        rises = ", ".join(f"{what} {share:+.0%}" for what, share in r.rises)
        text = (
            f"  release     {_safe(r.image)} from {_when(r.first_seen)}: load {_size(r.load_peak)}, serving "
            f"{_size(r.serving_peak)}, GPU {_size(r.gpu_peak)}" + (f" ({rises})" if rises else "")
        )
        lines.append(style(text + ": memory rose", fg="red") if r.flagged else text)
    return lines


def _what_if_lines(w: WhatIf, style: Style) -> list[str]:
    verdict = "passes" if w.passes else "does not pass"
    head = f"what if {w.setting}={_safe(w.text)} on {_safe(w.workload.title)}: {verdict}"
    return [style(head, bold=True, fg="green" if w.passes else "red"), f"  {_safe(w.answer)}"]


def _regex_literal(text: str) -> str:
    return "".join(f"\\{ch}" if ch in ".^$*+?()[]{}|\\" else ch for ch in text)


def money(value: float | None, currency: str) -> str:
    """An amount as a person writes it: `23,360 USD`, `0.5 USD`, `2,920 GPU-hours`; `no price` without one."""
    if value is None:
        return "no price"
    shown = f"{round(value):,}" if abs(value) >= 100 else number_text(round(value, 2))
    return f"{shown} {currency}".strip()


def _saving_text(s: Saving, currency: str) -> str:
    if s.per_month is None:
        amount = "no price for these GPUs"
    elif s.gpus_freed == 0:
        amount = f"frees no GPU, saves 0 {currency}".strip()
    elif s.per_month >= 0:
        amount = f"frees {number_text(s.gpus_freed)} GPU{'s' if s.gpus_freed != 1 else ''}: saves {money(s.per_month, currency)} a month"
    else:
        amount = f"adds {number_text(-s.gpus_freed)} GPU{'s' if s.gpus_freed != -1 else ''}: costs {money(-s.per_month, currency)} a month more"
    return f"{s.change}: {amount} ({s.note})" if s.note else f"{s.change}: {amount}"


def _cost_lines(cost: WorkloadCost, currency: str) -> list[str]:
    model = f" {cost.gpu_model}" if cost.gpu_model else ""
    price = f" at {money(cost.hourly, currency)} a GPU-hour" if cost.hourly is not None else " (no price for this GPU model)"
    gpus = f"{number_text(cost.gpus_per_pod)} GPU{'s' if cost.gpus_per_pod != 1 else ''}{model} per pod x {cost.pods}"
    lines = [f"  cost        {gpus}{price}: {money(cost.per_month, currency)} a month"]
    lines += [f"              {'if ' if s.possible else ''}{_saving_text(s, currency)}" for s in cost.savings]
    return lines


def _scaling_lines(found: tuple[ModelScaling, ...], style: Style, currency: str = "") -> list[str]:
    lines = [style("autoscaling targets from the TTFT SLO's history", bold=True)]
    for m in found:
        title = f"{m.cluster + ' ' if m.cluster else ''}{m.namespace} {m.model}"
        queue = f"queue {m.queue_target:g}" if m.queue_target is not None else "queue: keep the default"
        kv = f"KV cache {m.kv_target:g}" if m.kv_target is not None else "KV cache: keep the default"
        peak = (
            f"needed {_replicas(m.replicas_peak)} at its peak ({_when(m.peak_at)}, with {m.pods_at_peak} running)"
            if m.replicas_peak is not None and m.peak_at is not None
            else "replicas needed: not measured"
        )
        lines += [
            f"  {_safe(title)}: {queue}, {kv}; {peak}; {m.replicas_now} now",
            f"              {_safe(m.basis)}",
        ]
        if m.saving is not None:
            lines.append(f"              {_saving_text(m.saving, currency)}")
    return lines


def _replicas(n: int) -> str:
    return f"{n} replica{'s' if n != 1 else ''}"


def _number(value: float) -> int | float:
    """3.0 as 3, 0.85 as 0.85: as a person writes it in YAML."""
    return int(value) if float(value).is_integer() else value


def autoscaling_block(found: tuple[ModelScaling, ...]) -> str:
    """The `autoscaling:` block of obspack.yaml the history suggests (`rightsize --autoscaling`): per-model
    targets where the history placed them, and an autoscaler for each workload of a model whose TTFT SLO
    history could be judged, its maximum one above the replicas the peak needed."""
    models, scalers = [], []
    for m in found:
        targets: dict[str, Any] = {}
        if m.queue_target is not None:
            targets["queue"] = _number(m.queue_target)
        if m.kv_target is not None:
            targets["kv_cache"] = _number(m.kv_target)
        if targets:
            models.append({"model_regex": _regex_literal(m.model), **targets})
        if not m.steps:
            continue
        for key in m.workloads:
            if key.kind not in ("Deployment", "StatefulSet", "LeaderWorkerSet") or m.replicas_peak is None:
                continue
            scaler: dict[str, Any] = {"name": key.name, "namespace": key.namespace, "model": m.model}
            if key.cluster:
                scaler["cluster"] = key.cluster
            scaler["target"] = {"kind": key.kind, "name": key.name}
            scaler["min_replicas"] = 1
            scaler["max_replicas"] = max(m.replicas_peak + 1, m.replicas_now, 1)
            scalers.append(scaler)
    block: dict[str, Any] = {}
    if models:
        block["models"] = models
    if scalers:
        block["autoscalers"] = scalers
    if not block:
        return "# nothing to suggest: see the autoscaling section of the report\n"
    return yaml.safe_dump({"autoscaling": block}, sort_keys=False, allow_unicode=True)


# ---------------------------------------------------------------------------------------------------------
# JSON


def as_json(report: Report) -> dict[str, Any]:
    r = report.rules
    owners = patches.owner_patches(report.workloads, report.include_low)
    return {
        "schema": SCHEMA,
        "prometheus": _shown_url(report.url),
        "backend": report.backend,
        "at": _when(report.at),
        "window_s": report.window_s,
        "step_s": report.step_s,
        "load_window_s": report.load_s,
        "rules": {
            "margin": r.margin,
            "oom_factor": r.oom_factor,
            "oom_min_bytes": r.oom_min_bytes,
            "granule_bytes": r.granule_bytes,
            "tolerance": r.tolerance,
            "release_rise": r.release_rise,
            "min_history_s": r.min_history_s,
            "min_points": r.min_points,
        },
        "workloads": [_workload(w, report.include_low) for w in report.workloads],
        "patches": [
            {
                "cluster": o.cluster,
                "namespace": o.namespace,
                "kind": o.kind,
                "name": o.name,
                "where": o.where,
                "containers": list(o.containers),
                "patch": o.patch,
                "kubectl": o.command,
                "vllm_args": {container: list(flags) for container, flags in o.args},
                "confidence": list(o.confidence),
                "file": o.file_name if o.patch is not None else None,
            }
            for o in owners
        ],
        "what_if": _what_if(report.what_if) if report.what_if is not None else None,
        "autoscaling": [_scaling(m) for m in report.scaling],
        "autoscaling_config": autoscaling_block(report.scaling) if report.scaling else None,
        "notes": list(report.notes),
        "selectors_tried": list(report.selectors) if not report.workloads else [],
        "failed_queries": [{"quantity": f.quantity, "error": f.error} for f in report.failures],
        "summary": {
            "workloads": len(report.workloads),
            "actionable": sum(1 for w in report.workloads if w.actionable),
            "patched": sum(1 for w in report.workloads if patches.patchable(w, report.include_low)),
            "not_enough_data": sum(1 for w in report.workloads if w.confidence.level is Level.NONE),
            "include_low": report.include_low,
        },
        "currency": report.currency,
        "hours_per_month": HOURS_PER_MONTH,
        "requests": report.requests,
        "elapsed_s": round(report.elapsed_s, 3),
        "exit_code": report.exit_code,
    }


def _backtest(bt: Backtest) -> dict[str, Any]:
    return {
        "limit_bytes": bt.limit,
        "request_bytes": bt.request,
        "runs": bt.runs,
        "runs_killed": bt.runs_killed,
        "loads_before_window": bt.loads_before,
        "loads_unknown": bt.loads_unknown,
        "days": bt.days,
        "days_killed": bt.days_killed,
        "days_over_request": bt.days_over_request,
        "peak_bytes": bt.peak,
        "peak_to_limit": bt.peak_ratio,
        "kills": bt.kills,
        "text": _backtest_text(bt),
    }


def _workload(w: Workload, include_low: bool) -> dict[str, Any]:
    m, c = w.memory, w.confidence
    return {
        "cluster": w.key.cluster,
        "namespace": w.key.namespace,
        "kind": w.key.kind,
        "name": w.key.name,
        "owner_guessed": w.owner_guessed,
        "container": w.key.container,
        "models": list(w.models),
        "images": list(w.images),
        "pods": w.pods,
        "alive": w.alive,
        "actionable": w.actionable,
        "patched": patches.patchable(w, include_low),
        "risks": list(w.risks),
        "changes": list(w.changes),
        "confidence": {
            "level": c.level.value,
            "points": c.points,
            "span_s": round(c.span_s),
            "restarts": c.restarts,
            "reasons": list(c.reasons),
        },
        "memory": {
            "load_peak_bytes": m.load_peak,
            "load": {"peak_bytes": m.load.peak, "source": m.load.source.value, "detail": m.load.detail},
            "serving_peak_bytes": m.serving_peak,
            "serving_p99_bytes": m.serving_p99,
            "traffic_peak_bytes": m.traffic_peak,
            "window_peak_bytes": m.window_peak,
            "load_and_serving_split": m.split,
            "oom_kills": m.oom_kills,
            "usage_at_kill_bytes": m.usage_at_kill,
            "current": {"request_bytes": m.current_request, "limit_bytes": m.current_limit},
            "computed": {"request_bytes": m.computed_request, "limit_bytes": m.computed_limit},
            "recommended": {"request_bytes": m.request, "limit_bytes": m.limit},
            "decision": {"limit": m.limit_decision.value, "request": m.request_decision.value},
            "notes": {"limit": m.limit_note, "request": m.request_note},
            "rules": {"request": m.request_rule, "limit": m.limit_rule},
            "risk": m.risk.value,
            "peak_to_limit": m.peak_to_limit,
            "change": {"limit": m.limit_change, "request": m.request_change},
        },
        "backtest": _backtest(w.backtest) if w.backtest is not None else None,
        "gpu": _gpu(w.gpu, w.gpu_risk) if w.gpu is not None else None,
        "vllm_args": [
            {
                "flag": k.flag,
                "current": k.current,
                "current_source": k.current_note,
                "recommended": k.recommended,
                "basis": k.basis,
                "change": k.change,
                "measured": {name: (value if math.isfinite(value) else None) for name, value in k.measured},
            }
            for k in w.knobs
        ],
        "suggested_args": list(patches.suggested_args(w)),
        "env": [{"name": name, "value": value, "why": why} for name, value, why in w.env],
        "cost": _cost(w.cost) if w.cost is not None else None,
        "releases": [
            {
                "image": r.image,
                "first_seen": _when(r.first_seen),
                "pods": r.pods,
                "load_peak_bytes": r.load_peak,
                "serving_peak_bytes": r.serving_peak,
                "gpu_peak_bytes": r.gpu_peak,
                "rises": {what: round(share, 4) for what, share in r.rises},
                "flagged": r.flagged,
            }
            for r in w.releases
        ],
    }


def _gpu(g: GPU, risk: bool) -> dict[str, Any]:
    return {
        "framebuffer_total_bytes": g.framebuffer_total,
        "peak_bytes": g.peak,
        "median_bytes": g.median,
        "peak_ratio": g.peak_ratio,
        "near_full": risk,
        "gpu_memory_utilization": g.gpu_memory_utilization,
        "recommended_gpu_memory_utilization": g.recommended_utilization,
        "projected_peak_ratio": g.projected_peak_ratio,
        "kv_cache": {
            "peak": g.kv_peak,
            "p99": g.kv_p99,
            "preemptions": g.preemptions,
            "waiting_peak": g.waiting_peak,
            "waiting_share": g.waiting_share,
            "waits_by_reason": g.waits_by_reason,
            "verdict": g.verdict.value,
        },
        "advice": list(g.advice),
    }


def _scaling(m: ModelScaling) -> dict[str, Any]:
    return {
        "cluster": m.cluster,
        "namespace": m.namespace,
        "model": m.model,
        "workloads": [{"kind": k.kind, "name": k.name, "container": k.container} for k in m.workloads],
        "steps_judged": m.steps,
        "steps_burning": m.burning,
        "ttft_objective": m.objective,
        "queue_target": m.queue_target,
        "kv_cache_target": m.kv_target,
        "basis": m.basis,
        "replicas_now": m.replicas_now,
        "replicas_needed_at_peak": m.replicas_peak,
        "peak_at": _when(m.peak_at) if m.peak_at is not None else None,
        "replicas_at_peak": m.pods_at_peak,
        "targets_used": {"queue": m.targets_used[0], "kv_cache": m.targets_used[1]},
        "saving": _saving(m.saving) if m.saving is not None else None,
    }


def _saving(s: Saving) -> dict[str, Any]:
    return {"change": s.change, "gpus_freed": s.gpus_freed, "per_month": s.per_month, "note": s.note, "possible": s.possible}


def _cost(cost: WorkloadCost) -> dict[str, Any]:
    return {
        "gpus_per_pod": cost.gpus_per_pod,
        "gpu_model": cost.gpu_model,
        "hourly_per_gpu": cost.hourly,
        "pods": cost.pods,
        "per_month": cost.per_month,
        "savings": [_saving(s) for s in cost.savings],
    }


def _what_if(w: WhatIf) -> dict[str, Any]:
    return {
        "cluster": w.workload.cluster,
        "namespace": w.workload.namespace,
        "kind": w.workload.kind,
        "name": w.workload.name,
        "container": w.workload.container,
        "setting": w.setting,
        "value": w.value,
        "given": w.text,
        "passes": w.passes,
        "answer": w.answer,
        "backtest": _backtest(w.backtest) if w.backtest is not None else None,
        "facts": {name: value for name, value in w.facts},
    }
