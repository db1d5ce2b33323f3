"""The engine records per model and prefill/decode role, for the disaggregated-serving page.

Each pod's role is the role record's `role` (prefill, decode or both, obspack/rules/roles.py via
obspack/rules/recording/cost.py); the per-pod engine records are those of `obspack-vllm.rules`. Both are
records of other groups, so these sit in a group of their own, two hops from raw series (a page may read
two; no alert reads them). A few series per model (one per role it runs): the page's graphs joined 1,000
pods to their roles at every step of a range, ~0.8 s each.
"""

from __future__ import annotations

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.rules import roles
from obspack.rules.model import RecordingRule, RuleGroup

BOTH = "both"
ROLES: tuple[str, ...] = (*roles.VALUES, BOTH)  # every pod has exactly one
# (record, the per-pod engine record it reads, how the pods of a role are aggregated)
BY_ROLE: tuple[tuple[str, str, str], ...] = (
    (c.ROLE_WAITING, c.WAITING, "avg"),
    (c.ROLE_RUNNING, c.RUNNING, "avg"),
    (c.ROLE_KV_USAGE, c.KV_USAGE, "avg"),
    (c.ROLE_KV_USAGE_MAX, c.KV_USAGE, "max"),
    (c.ROLE_PROMPT_RATE, c.PROMPT_RATE, "sum"),
    (c.ROLE_GENERATION_RATE, c.GENERATION_RATE, "sum"),
    (c.ROLE_PODS, c.RUNNING, "count"),  # the pods serving, for the prefill:decode ratio
)


def by_role(cfg: ObspackConfig, record: str, how: str) -> str:
    """A per-pod engine record aggregated per model and role: one term per role, the record's pods of that
    role (`and` with the role record's pods of the role: each pod passes as it is, and a pod the role record
    shows twice while its role changes counts once per role) aggregated per model, then labelled."""
    per_model, pod = c.by(cfg, "namespace", "model_name"), c.by(cfg, "namespace", "pod")
    return "\nor\n".join(
        f"label_replace(\n  {how} by ({per_model}) (\n    {record}\n    and on ({pod})\n"
        f'    {c.POD_ROLE}{{role="{role}"}}\n  ),\n  "role", "{role}", "", ""\n)'
        for role in ROLES
    )


def group(cfg: ObspackConfig) -> RuleGroup:
    rules = tuple(RecordingRule(record=name, expr=by_role(cfg, reads, how)) for name, reads, how in BY_ROLE)
    return RuleGroup(name=f"{c.GROUP_PREFIX}-vllm-roles.rules", rules=rules, interval=cfg.rule_interval)
