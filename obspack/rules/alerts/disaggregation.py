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


def per_role(cfg: ObspackConfig, series: str) -> str:
    """The average of a per-pod series over each model's prefill-only pods and its decode-only pods, by `role`
    (nothing where nothing tells roles apart)."""
    of_role = roles.only_roles(cfg) or "(vector(1) == 0)"
    joined = f"(\n{_indent(series)}\n)\n* on ({c.by(cfg, 'namespace', 'pod')}) group_left (role)\n(\n{_indent(of_role)}\n)"
    return f"avg by ({c.by(cfg, *MODEL, 'role')}) (\n{_indent(joined)}\n)"


def waiting_for_capacity(cfg: ObspackConfig) -> str:
    """Requests waiting for capacity per pod and model: its engines' queues added up."""
    return f"sum by ({c.by(cfg, *POD_MODEL)}) {engines.waiting_for_capacity(cfg)}"


def other_side() -> str:
    """A constant table: the other side of each role (`other_role`)."""
    rows = (f'label_replace(label_replace(vector(1), "role", "{r}", "", ""), "other_role", "{o}", "", "")' for r, o in OTHER.items())
    return "\n  or\n  ".join(rows)


def short_sides(cfg: ObspackConfig) -> str:
    """Per model, the requests waiting for capacity per pod of the side that is saturated (its queue above
    the threshold, or its KV cache nearly full with requests waiting) while the other side has room (nearly
    no queue, KV cache well below full), labelled `short="<side>"`. Both sides are averaged in one pass each
    (queue, KV cache), and each side's room is set beside the other side (`other_side`), so the pods' queues
    are read three times and their KV caches twice, whichever side is short."""
    t = cfg.alerts.VLLMPrefillDecodeImbalance
    on = c.by(cfg, *MODEL, "role")
    queue, kv = per_role(cfg, waiting_for_capacity(cfg)), per_role(cfg, c.KV_USAGE)
    saturated = f"{queue} > {t.waiting_per_pod:g}\nor on ({on})\n(\n{_indent(queue)} > 0\n  and on ({on})\n{_indent(kv)} > {t.kv_ratio:g}\n)"
    room = f"{queue} < 1\nand on ({on})\n{kv} < {t.room_kv_ratio:g}"
    facing = f"(\n{_indent(room)}\n)\n* on (role) group_left (other_role)\n(\n  {other_side()}\n)"
    facing = f'label_replace(\n{_indent(facing)},\n  "role", "$1", "other_role", "(.+)"\n)'  # the room beside the short side
    both = f"(\n{_indent(saturated)}\n)\nand on ({on})\n{facing}"
    named = f'label_replace(\n{_indent(both)},\n  "short", "$1", "role", "(.+)"\n)'
    return f'label_replace(\n{_indent(named)},\n  "role", "", "", ""\n)'


def prefill_decode_imbalance(cfg: ObspackConfig) -> AlertRule:
    t = cfg.alerts.VLLMPrefillDecodeImbalance
    return AlertRule(
        alert="VLLMPrefillDecodeImbalance",
        expr=short_sides(cfg),
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
