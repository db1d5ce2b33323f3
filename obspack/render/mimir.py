"""Grafana Mimir's ruler: one namespace file per rule file, for `mimirtool rules load` or `sync`.

The groups are the Prometheus groups, within Mimir's default limits (`-ruler.max-rules-per-rule-group`
20, `-ruler.max-rule-groups-per-tenant` 70). A group over 20 rules is cut into parts along its own
dependencies: rules that read a record made earlier in the group stay in the same part, so no alert
moves a rule-group hop further from raw series. A chain of more than 20 such rules cannot be cut
without adding a hop, and the render stops with an error that says so.
"""

from __future__ import annotations

from obspack.errors import RenderError
from obspack.pack import Pack
from obspack.promql import metric_names
from obspack.rules.model import AlertRule, RecordingRule, RuleGroup

RECORDING_NAMESPACE = "obspack-recording-rules"
ALERTS_NAMESPACE = "obspack-alerts"
MAX_RULES_PER_GROUP = 20
MAX_GROUPS_PER_TENANT = 70


def _chains(rules: tuple[RecordingRule | AlertRule, ...]) -> list[list[int]]:
    """Rule positions grouped so that a reader shares a chain with the records it reads, in order."""
    chain = list(range(len(rules)))

    def root(i: int) -> int:
        while chain[i] != i:
            i = chain[i]
        return i

    made = {r.record: i for i, r in enumerate(rules) if isinstance(r, RecordingRule)}
    for i, rule in enumerate(rules):
        for name in metric_names(rule.expr):
            if name in made and made[name] < i:
                chain[root(i)] = root(made[name])
    chains: dict[int, list[int]] = {}
    for i in range(len(rules)):
        chains.setdefault(root(i), []).append(i)
    return sorted(chains.values())


def split(group: RuleGroup, limit: int = MAX_RULES_PER_GROUP) -> list[RuleGroup]:
    """The group as it is when it fits, else parts `NAME.1`, `NAME.2`, ... of whole chains, in order."""
    if len(group.rules) <= limit:
        return [group]
    parts: list[list[int]] = [[]]
    for chain in _chains(group.rules):
        if len(chain) > limit:
            raise RenderError(
                f"rule group {group.name}: {len(chain)} rules read each other in one chain, over Mimir's "
                f"default of {limit} rules per group; raise -ruler.max-rules-per-rule-group for the tenant "
                "or split the chain across groups in obspack"
            )
        if len(parts[-1]) + len(chain) > limit:
            parts.append([])
        parts[-1].extend(chain)
    return [
        RuleGroup(name=f"{group.name}.{n}", rules=tuple(group.rules[i] for i in sorted(part)), interval=group.interval)
        for n, part in enumerate(parts, start=1)
    ]


def mimir_files(pack: Pack) -> dict[str, dict[str, object]]:
    namespaces = {
        ns: [part for g in groups for part in split(g)]
        for ns, groups in ((RECORDING_NAMESPACE, pack.recording_groups), (ALERTS_NAMESPACE, pack.alert_groups))
    }
    total = sum(len(groups) for groups in namespaces.values())
    if total > MAX_GROUPS_PER_TENANT:
        raise RenderError(
            f"the pack has {total} rule groups for Mimir, over its default of {MAX_GROUPS_PER_TENANT} per tenant; "
            "raise -ruler.max-rule-groups-per-tenant or disable alerts you do not use"
        )
    return {
        f"mimir/{ns}.yaml": {"namespace": ns, "groups": [g.to_dict() for g in groups]}
        for ns, groups in namespaces.items()
    }
