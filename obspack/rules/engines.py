"""Judging a pod engine by engine: vLLM's data-parallel engines (`--data-parallel-size N`, the `engine`
label from 0.8.3) each run their own scheduler, queue and KV cache, so one engine can hang or fill up
while the others serve. The pod-level records sum or max over engines and hide that; the alerts that
must see it read the raw series here, per pod, model and engine.

`pod_or_engines` turns a per-engine condition into alerts: ONE alert per pod, without an `engine`
label, when every engine of the pod holds it (a single-engine pod, a dense model whose engines step
together, a pod-wide overload), else one alert per engine that holds it, with its `engine` label.
Series without an `engine` label (vLLM before 0.8.3, the V0 engine) are one engine per pod: they
always give the pod-wide form.

No record is added: a per-engine record would be paid for by every engine of the fleet, where these
expressions read a few gauges per engine at evaluation only (docs/rules.md, "Data-parallel engines").
"""

from __future__ import annotations

from obspack import conventions as c
from obspack.catalogue import vllm_features as f
from obspack.catalogue.vllm import GPU_CACHE_USAGE, KV_CACHE_USAGE, POD_MODEL
from obspack.config import ObspackConfig
from obspack.rules.recording.vllm import sel

ENGINE = "engine"
PER_ENGINE = (*POD_MODEL, ENGINE)


def by_engine(cfg: ObspackConfig) -> str:
    return c.by(cfg, *PER_ENGINE)


def gauge(cfg: ObspackConfig, metric: str, *extra: str) -> str:
    """A vLLM gauge per pod, model and engine, after collapsing per-process (`pid`) copies."""
    return f"sum by ({by_engine(cfg)}) (max without (pid) ({metric}{sel(cfg, *extra)}))"


def kv_usage(cfg: ObspackConfig) -> str:
    """KV cache usage per engine under either name (0.9.2+ first; 0.9.2-0.10.2 serve both, equal)."""
    return f"max by ({by_engine(cfg)}) ({KV_CACHE_USAGE}{sel(cfg)} or {GPU_CACHE_USAGE}{sel(cfg)})"


def in_flight(cfg: ObspackConfig) -> str:
    """Requests running plus waiting, per engine."""
    return f"({gauge(cfg, 'vllm:num_requests_running')}\n+ {gauge(cfg, 'vllm:num_requests_waiting')})"


def waiting_for_capacity(cfg: ObspackConfig) -> str:
    """Requests waiting for KV blocks or a batch slot, per engine: the `capacity` reason where the engine
    reports reasons (0.20+), else every waiting request (older engines cannot tell). Requests deferred on
    something else (a KV transfer from a prefill pod, a grammar, a LoRA slot) are left out: more capacity
    would not admit them. An engine that reports some reason but no `capacity` series counts 0, not its
    whole queue. For alerts (the `unless` would make a record unsafe on partial data)."""
    capacity = gauge(cfg, f.WAITING_BY_REASON, f.CAPACITY)
    reporting = f"group by ({by_engine(cfg)}) ({f.WAITING_BY_REASON}{sel(cfg)})"
    waiting = gauge(cfg, "vllm:num_requests_waiting")
    # each side is one series per engine with the same labels, so `or` keeps the first that has the engine
    return f"(\n  {capacity}\n  or\n  0 * {reporting}\n  or\n  {waiting}\n)"


def pod_or_engines(cfg: ObspackConfig, holds: str, fine: str, pod_value: str = "sum") -> str:
    """Alerts from a per-engine condition. `holds`: the engines where it holds, `fine`: the engines of the
    same pods where it does not (both per pod, model and engine). A pod with no fine engine gives one
    series without `engine` (`pod_value` of its engines' values: `sum` for counts, `max` for usage);
    a pod with a fine engine gives the engines that hold, each with its `engine` label.

    Both forms read `holds` and `fine`. `pod_wide or on (pod) holds` would spare one read of `fine`, but
    VictoriaMetrics does not answer it as Prometheus does (vmalert then pages pod-wide for one hung engine
    of two: tests/rules/test_vmalert_replay.py)."""
    pod, pm = c.by(cfg, "namespace", "pod"), c.by(cfg, *POD_MODEL)
    holds, fine = _paren(holds), _paren(fine)
    pod_wide = f"{pod_value} by ({pm}) {holds}\nunless on ({pod})\n{fine}"
    some = f"{holds}\nand on ({pod})\n{fine}"
    # parenthesised whole: `or` binds looser than the `unless` a caller may add
    return _paren(f"{_paren(pod_wide)}\nor\n{_paren(some)}")


def _paren(expr: str) -> str:
    return f"(\n{_indent(expr)}\n)"


def _indent(text: str) -> str:
    return "\n".join("  " + line if line else line for line in text.splitlines())
