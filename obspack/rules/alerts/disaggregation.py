"""Prefill/decode disaggregation: whether the prefill and the decode side of a model are balanced.

Per cluster, namespace and model that has both prefill-only and decode-only pods (obspack/rules/roles.py),
each side is averaged over its own pods: requests waiting for capacity per pod (`waiting_for_capacity`:
requests deferred on a KV transfer from a prefill pod do not count, more decode pods would not admit them)
and KV cache usage. One side saturated while the other has room is the most common P/D misconfiguration: a
prefill:decode ratio that no longer fits the traffic's prompt and output lengths. The alert says which side
is short (`short`). It reads the engine records and raw kube-state-metrics series: one group hop.
"""

from __future__ import annotations

import textwrap

from obspack import conventions as c
from obspack.catalogue.vllm import POD_MODEL
from obspack.config import ObspackConfig
from obspack.rules import engines, roles
from obspack.rules.model import AlertRule

MODEL = ("namespace", "model_name")
OTHER: dict[roles.Role, roles.Role] = {"prefill": "decode", "decode": "prefill"}


def _indent(text: str) -> str:
    return textwrap.indent(text, "  ")


def per_pod_of(cfg: ObspackConfig, series: str, role: roles.Role) -> str:
    """The average of a per-pod series over the pods of a model that only do `role`."""
    return f"avg by ({c.by(cfg, *MODEL)}) (\n{_indent(roles.only(cfg, series, role))}\n)"


def waiting_for_capacity(cfg: ObspackConfig) -> str:
    """Requests waiting for capacity per pod and model: its engines' queues added up."""
    return f"sum by ({c.by(cfg, *POD_MODEL)}) {engines.waiting_for_capacity(cfg)}"


def short_side(cfg: ObspackConfig, role: roles.Role) -> str:
    """`role`'s requests waiting for capacity per pod, where that side is saturated (its queue above the
    threshold, or its KV cache nearly full with requests waiting) and the other side has room (nearly no
    queue, KV cache well below full); labelled `short="<role>"`."""
    t = cfg.alerts.VLLMPrefillDecodeImbalance
    on = c.by(cfg, *MODEL)
    other = OTHER[role]
    queue, kv = per_pod_of(cfg, waiting_for_capacity(cfg), role), per_pod_of(cfg, c.KV_USAGE, role)
    saturated = f"{queue} > {t.waiting_per_pod:g}\nor on ({on})\n(\n{_indent(queue)} > 0\n  and on ({on})\n{_indent(kv)} > {t.kv_ratio:g}\n)"
    room = (
        f"{per_pod_of(cfg, waiting_for_capacity(cfg), other)} < 1\n"
        f"and on ({on})\n{per_pod_of(cfg, c.KV_USAGE, other)} < {t.room_kv_ratio:g}"
    )
    both = f"(\n{_indent(saturated)}\n)\nand on ({on})\n(\n{_indent(room)}\n)"
    return f'label_replace(\n{_indent(both)},\n  "short", "{role}", "", ""\n)'


def prefill_decode_imbalance(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMPrefillDecodeImbalance
    return AlertRule(
        alert="VLLMPrefillDecodeImbalance",
        expr=f"{short_side(cfg, 'prefill')}\nor\n{short_side(cfg, 'decode')}",
        for_=t.for_,
        severity=t.severity,
        summary="One side of a prefill/decode pair is saturated while the other has room: the P:D ratio is off.",
        description="{{ $labels.namespace }}/{{ $labels.model_name }}: the {{ $labels.short }} pods are short, with "
        "{{ $value }} requests waiting for capacity per pod (or their KV cache usage above "
        f"{t.kv_ratio:g}), while the other side's pods have room. Scale the {{{{ $labels.short }}}} side.",
        runbook="vllm-prefill-decode-imbalance",
        triage="kubectl -n {{ $labels.namespace }} get pods -L " + (cfg.disaggregation.role_label or "app") + " -o wide",
        dashboard=c.DISAGGREGATION_DASHBOARD,
    )


ALERTS = (prefill_decode_imbalance,)
