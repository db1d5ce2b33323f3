"""Which pods only prefill, which only decode (prefill/decode disaggregation), as raw-series PromQL.

One place for the alerts, the dashboards and the cost records. Every expression here reads raw series only
(kube-state-metrics' pod labels, one vLLM gauge for pod names), so an alert can use it inline and stay one
rule-group hop from the data.

- By label: `disaggregation.role_label` (llm-d.ai/role) from `kube_pod_labels`. llm-d's values: `prefill`
  and `encode-prefill` only prefill, `decode` only decodes; `prefill-decode`, `both`,
  `encode-prefill-decode`, `encode` and no label at all do both (as llm-d's decode filter, which takes pods
  without the label).
- By name, for pods without the label: `disaggregation.prefill_pod_regex` / `decode_pod_regex` (llm-d's
  own alerts' `.*prefill.*` and `.*decode.*`). A name that matches both does both.
- Everything else does both, and carries no `role` label in the alerts (their label sets stay as they were
  on a fleet without disaggregation).
"""

from __future__ import annotations

import re
import textwrap
from typing import Literal

from obspack import conventions as c
from obspack.catalogue.vllm import HAS_MODEL, NUM_REQUESTS_RUNNING
from obspack.config import ObspackConfig, promql_string

Role = Literal["prefill", "decode"]
PREFILL_ROLES = ("prefill", "encode-prefill")  # llm-d role values of pods that only prefill
DECODE_ROLES = ("decode",)  # ... that only decode
VALUES: dict[Role, tuple[str, ...]] = {"prefill": PREFILL_ROLES, "decode": DECODE_ROLES}
ONLY: tuple[Role, ...] = ("decode", "prefill")  # the roles a pod may only do, in the order they are told apart
POD = ("namespace", "pod")
SET = '!=""'


def ksm_label(key: str) -> str:
    """The label kube-state-metrics gives a Kubernetes label: `label_` and the key with anything but
    letters, digits and `_` replaced by `_` (llm-d.ai/role -> label_llm_d_ai_role)."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def _key(cfg: ObspackConfig) -> str:
    return c.by(cfg, *POD)


def _regexes(cfg: ObspackConfig) -> dict[Role, str]:
    d = cfg.disaggregation
    return {"prefill": d.prefill_pod_regex, "decode": d.decode_pod_regex}


def known(cfg: ObspackConfig) -> bool:
    """Whether any source of roles is configured (a label or a name pattern)."""
    d = cfg.disaggregation
    return bool(d.role_label or d.prefill_pod_regex or d.decode_pod_regex)


def _labelled(cfg: ObspackConfig, matcher: str) -> str:
    label = ksm_label(cfg.disaggregation.role_label)
    return f"group by ({_key(cfg)}) (kube_pod_labels{c.selector(cfg.selectors.kube_state_metrics, label + matcher)})"


def by_label(cfg: ObspackConfig, role: Role) -> str:
    """The pods whose role label says they only `role` (empty when no role label is set)."""
    if not cfg.disaggregation.role_label:
        return ""
    return _labelled(cfg, f"=~{promql_string('|'.join(VALUES[role]))}")


def by_name(cfg: ObspackConfig, role: Role) -> str:
    """The vLLM pods without a role label whose name matches `role`'s pattern and not the other role's."""
    if not _regexes(cfg)[role]:
        return ""
    named = _named(cfg, role)
    if not cfg.disaggregation.role_label:
        return named
    return f"{named}\nunless on ({_key(cfg)})\n{_labelled(cfg, SET)}"


def _named(cfg: ObspackConfig, role: Role) -> str:
    """The vLLM pods whose name matches `role`'s pattern and not the other role's, labelled or not."""
    regexes = _regexes(cfg)
    own, other = regexes[role], regexes["decode" if role == "prefill" else "prefill"]
    matchers = [HAS_MODEL, f"pod=~{promql_string(own)}", *([f"pod!~{promql_string(other)}"] if other else [])]
    return f"group by ({_key(cfg)}) ({NUM_REQUESTS_RUNNING}{c.selector(cfg.selectors.vllm, *matchers)})"


def pods(cfg: ObspackConfig, role: Role) -> str:
    """One series (value 1) per pod that only does `role`: by its label, else by its name. Empty when
    nothing is configured to tell roles apart."""
    found = [e for e in (by_label(cfg, role), by_name(cfg, role)) if e]
    return f"\nor on ({_key(cfg)})\n".join(f"(\n{textwrap.indent(e, '  ')}\n)" if "\n" in e else e for e in found)


def without(cfg: ObspackConfig, expr: str, role: Role) -> str:
    """`expr` (keyed by namespace and pod) without the pods that only do `role`."""
    only = pods(cfg, role)
    return f"(\n{textwrap.indent(expr, '  ')}\n)\nunless on ({_key(cfg)})\n(\n{textwrap.indent(only, '  ')}\n)" if only else expr


def _labelled_roles(cfg: ObspackConfig) -> str:
    """The pods whose role label says they only prefill or only decode, with `role`, from one read of
    kube-state-metrics' pod labels (empty when no role label is set). Each llm-d value ends with the name
    of its role (`encode-prefill`): one label_replace takes it, with an alternative that matches every
    other value (VictoriaMetrics can set a label that a non-matching label_replace should leave alone)."""
    if not cfg.disaggregation.role_label:
        return ""
    label = ksm_label(cfg.disaggregation.role_label)
    values = [(value, role) for role in ONLY for value in VALUES[role]]
    assert all(value.endswith(role) for value, role in values), values
    regex = "|".join(f"{value[: -len(role)]}({role})" for value, role in values) + "|.*"
    taken = "".join(f"${i}" for i in range(1, len(values) + 1))
    matcher = f"{label}=~{promql_string('|'.join(v for v, _ in values))}"
    read = f"kube_pod_labels{c.selector(cfg.selectors.kube_state_metrics, matcher)}"
    renamed = f'label_replace(\n  {read},\n  "role", "{taken}", "{label}", {promql_string(regex)}\n)'
    return f"group by ({_key(cfg)}, role) (\n{textwrap.indent(renamed, '  ')}\n)"


def _named_roles(cfg: ObspackConfig) -> str:
    """The vLLM pods without a role label whose name says they only prefill or only decode, with `role`
    (the two name patterns exclude each other, so a pod is at most one)."""
    key = _key(cfg)
    named = [
        f'label_replace(\n  {_named(cfg, role)},\n  "role", "{role}", "", ""\n)' for role in ONLY if _regexes(cfg)[role]
    ]
    if not named:
        return ""
    joined = f"\nor on ({key})\n".join(named)
    wrapped = f"(\n{textwrap.indent(joined, '  ')}\n)"
    if not cfg.disaggregation.role_label:
        return wrapped if len(named) > 1 else joined
    return f"{wrapped}\nunless on ({key})\n{_labelled(cfg, SET)}"


def only_roles(cfg: ObspackConfig) -> str:
    """One series (value 1) per pod that only prefills or only decodes, with `role`; each source read once
    for both roles. Empty when nothing is configured to tell roles apart. One role per pod even while its
    role label changes (two kube-state-metrics replicas can disagree for a scrape): a join that copies
    `role` would otherwise fail the whole rule."""
    found = f"\nor on ({_key(cfg)})\n".join(e for e in (_labelled_roles(cfg), _named_roles(cfg)) if e)
    return f"topk by ({_key(cfg)}) (1,\n{textwrap.indent(found, '  ')}\n)" if found else ""


def role_of(cfg: ObspackConfig, every: str, other: str = "") -> str:
    """One series per pod of `every` (one per pod, value 1) with `role`: prefill or decode where a pod only
    does that, else `other` (empty: no role label). Pods outside `every` that have a role come too.

    Each source is read once for both roles (the alerts that carry `role` join this at every evaluation)."""
    rest = f'label_replace(\n{textwrap.indent(every, "  ")},\n  "role", "{other}", "", ""\n)' if other else every
    return f"\nor on ({_key(cfg)})\n".join(e for e in (only_roles(cfg), rest) if e)


def with_role(cfg: ObspackConfig, expr: str, source: str) -> str:
    """`expr` (keyed by namespace and pod) with a `role` label on the pods that only prefill or only decode.
    `source` is a series every pod of `expr` has (its record, or raw metric), giving the other pods."""
    if not known(cfg):
        return expr
    every = f"group by ({_key(cfg)}) ({source})"
    return (
        f"(\n{textwrap.indent(expr, '  ')}\n)\n"
        f"* on ({_key(cfg)}) group_left (role)\n(\n{textwrap.indent(role_of(cfg, every), '  ')}\n)"
    )
