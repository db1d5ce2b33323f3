"""The rightsize report: a table and a block per workload for a terminal, and the versioned JSON document
(docs/rightsize.md describes every field of schema `obspack.rightsize/v1`)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from obspack.durations import format_ms
from obspack.rightsize import patches
from obspack.rightsize.model import GPU, Knob, Level, Memory, Release, Report, Risk, Workload
from obspack.rightsize.sizing import human_bytes

SCHEMA = "obspack.rightsize/v1"
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
    return human_bytes(value) if value is not None else "-"


def _share(value: float | None) -> str:
    return f"{value:.0%}" if value is not None else "-"


def _change(current: float | None, recommended: float | None, changed: bool) -> str:
    if recommended is None:
        return _size(current)
    return f"{_size(current)} -> {_size(recommended)}" if changed else f"{_size(current)} ok"


# ---------------------------------------------------------------------------------------------------------
# Text


def text(report: Report, style: Style = _plain) -> str:
    r = report.rules
    lines = [
        style(f"obspack rightsize: {_safe(_shown_url(report.url))} ({_safe(report.backend)})", bold=True),
        f"window {format_ms(report.window_s * 1000)} to {_when(report.at)}, step {format_ms(report.step_s * 1000)}; "
        f"model load = the first {format_ms(report.load_s * 1000)} after each container start",
        f"rules: limit = highest peak x {1 + r.margin:g} (after an OOM kill, at least the limit it had x "
        f"{r.oom_factor:g}); request = serving p99 x {1 + r.margin:g}; rounded up to {human_bytes(r.granule_bytes)}; "
        f"values within {r.tolerance:.0%} are kept",
        "",
    ]
    if report.workloads:
        lines += _table(report.workloads)
        for w in report.workloads:
            lines += ["", *_block(w, style)]
    found = [*report.notes, *(f"could not measure {f.quantity}: {_safe(f.error)}" for f in report.failures)]
    if found:
        lines.append("")
        lines += [style(f"note: {n}", fg="yellow") for n in found]
    actionable = sum(1 for w in report.workloads if w.actionable)
    lines += [
        "",
        f"{len(report.workloads)} workloads, {actionable} with recommendations or risks; "
        f"{report.requests} requests in {report.elapsed_s:.1f} s; exit code {report.exit_code}",
    ]
    return "\n".join(lines)


def _table(found: tuple[Workload, ...]) -> list[str]:
    rows = [("WORKLOAD", "MEMORY LIMIT", "MEMORY REQUEST", "RISK", "KV CACHE", "DATA")]
    for w in found:
        m = w.memory
        rows.append(
            (
                _safe(w.key.title),
                _change(m.current_limit, m.limit, m.limit_change),
                _change(m.current_request, m.request, m.request_change),
                m.risk.value,
                w.gpu.verdict.value if w.gpu else "-",
                f"{w.confidence.span_s / 86400:.1f}d {w.confidence.level.value}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def _block(w: Workload, style: Style) -> list[str]:
    head = f"{_safe(w.key.title)}{' (owner read from the pod name)' if w.owner_guessed else ''}"
    facts = [f"{w.pods} pod{'s' if w.pods != 1 else ''}"]
    if w.models:
        facts.insert(0, "model " + _safe(", ".join(w.models)))
    if not w.alive:
        facts.append("not running at the end of the window")
    lines = [style(head, bold=True) + "  " + ", ".join(facts)]
    lines += _memory_lines(w.memory)
    if w.gpu is not None:
        lines += _gpu_lines(w.gpu)
    lines += _knob_lines(w.knobs)
    lines += [f"  env         {name}={value} ({why})" for name, value, why in w.env]
    if len(w.releases) > 1:
        lines += _release_lines(w.releases, style)
    c = w.confidence
    restarts = f"{c.restarts} restart{'s' if c.restarts != 1 else ''}"
    data = f"  data        {c.span_s / 86400:.1f} d, {c.points} samples, {restarts}: {c.level.value}"
    if c.level is not Level.HIGH:
        data += " (" + "; ".join(c.reasons) + ")"
    lines.append(style(data, fg="yellow") if c.level is Level.NONE else data)
    for owner in patches.owner_patches((w,)):
        if owner.command:
            lines.append(f"  patch       {_safe(owner.command)}")
        elif owner.containers:
            changes = json.dumps(list(owner.containers), separators=(",", ":"), sort_keys=True)
            lines.append(f"  change      in {owner.where}: {_safe(changes)}")
        for container, flags in owner.args:
            lines.append(f"  vLLM args   set on {_safe(container)}: {' '.join(flags)}")
    return lines


def _memory_lines(m: Memory) -> list[str]:
    measured = (
        f"  host RAM    load peak {_size(m.load_peak)}; serving p99 {_size(m.serving_p99)}, "
        f"peak {_size(m.serving_peak)}, under traffic {_size(m.traffic_peak)}; {m.oom_kills} OOM kills"
    )
    risk = f"risk {m.risk.value}"
    if m.peak_to_limit is not None and m.risk is not Risk.OOM:
        risk += f" (peak at {m.peak_to_limit:.0%} of the limit)"
    return [
        measured,
        f"  limit       {_change(m.current_limit, m.limit, m.limit_change)} ({_rule(m.limit, m.limit_rule)}); {risk}",
        f"  request     {_change(m.current_request, m.request, m.request_change)} ({_rule(m.request, m.request_rule)})",
    ]


def _rule(recommended: float | None, rule: str) -> str:
    return f"{_size(recommended)}: {rule}" if recommended is not None else rule


def _gpu_lines(g: GPU) -> list[str]:
    total = f" of {_size(g.framebuffer_total)}" if g.framebuffer_total else ""
    util = f"--gpu-memory-utilization {g.gpu_memory_utilization:.2f}" if g.gpu_memory_utilization else "utilization unknown"
    waits = "capacity waits" if g.waits_by_reason else "waits"
    lines = [
        f"  GPU         framebuffer peak {_size(g.peak)}, median {_size(g.median)}{total} ({util})",
        f"  KV cache    peak {_share(g.kv_peak)}, p99 {_share(g.kv_p99)}, {g.preemptions or 0:.0f} preemptions, "
        f"{waits} {_share(g.waiting_share)} of the time: {g.verdict.value}",
    ]
    lines += [f"              {a}" for a in g.advice]
    return lines


def _knob_lines(knobs: tuple[Knob, ...]) -> list[str]:
    lines = []
    for k in knobs:
        if k.recommended is None:
            lines.append(f"  vLLM        {k.flag}: no change ({k.basis})")
            continue
        value = k.recommended
        target = k.flag if value == "off" else f"{k.flag}={value:g}" if isinstance(value, float) else f"{k.flag}={value}"
        if k.change:
            now = f" (now {k.current:g})" if k.current is not None else ""
            head = f"set {target}{now}"
        else:
            head = f"{target} suggested"
        lines.append(f"  vLLM        {head}: {k.basis}; current value: {k.current_note}")
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


# ---------------------------------------------------------------------------------------------------------
# JSON


def as_json(report: Report) -> dict[str, Any]:
    r = report.rules
    owners = patches.owner_patches(report.workloads)
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
        "workloads": [_workload(w) for w in report.workloads],
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
            }
            for o in owners
        ],
        "notes": list(report.notes),
        "failed_queries": [{"quantity": f.quantity, "error": f.error} for f in report.failures],
        "summary": {
            "workloads": len(report.workloads),
            "actionable": sum(1 for w in report.workloads if w.actionable),
            "not_enough_data": sum(1 for w in report.workloads if w.confidence.level is Level.NONE),
        },
        "requests": report.requests,
        "elapsed_s": round(report.elapsed_s, 3),
        "exit_code": report.exit_code,
    }


def _workload(w: Workload) -> dict[str, Any]:
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
            "serving_peak_bytes": m.serving_peak,
            "serving_p99_bytes": m.serving_p99,
            "traffic_peak_bytes": m.traffic_peak,
            "load_and_serving_split": m.split,
            "oom_kills": m.oom_kills,
            "usage_at_kill_bytes": m.usage_at_kill,
            "current": {"request_bytes": m.current_request, "limit_bytes": m.current_limit},
            "recommended": {"request_bytes": m.request, "limit_bytes": m.limit},
            "rules": {"request": m.request_rule, "limit": m.limit_rule},
            "risk": m.risk.value,
            "peak_to_limit": m.peak_to_limit,
            "change": {"limit": m.limit_change, "request": m.request_change},
        },
        "gpu": _gpu(w.gpu) if w.gpu is not None else None,
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


def _gpu(g: GPU) -> dict[str, Any]:
    return {
        "framebuffer_total_bytes": g.framebuffer_total,
        "peak_bytes": g.peak,
        "median_bytes": g.median,
        "peak_ratio": g.peak_ratio,
        "gpu_memory_utilization": g.gpu_memory_utilization,
        "recommended_gpu_memory_utilization": g.recommended_utilization,
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
