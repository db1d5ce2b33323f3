"""Thanos Ruler: the Prometheus rule files, each group with its `partial_response_strategy`.

Thanos Ruler queries every store through Thanos Query. When a store does not answer, `abort` fails the
evaluation (the rule writes nothing, an alert keeps its state) and `warn` evaluates on what answered.

- Alert groups: `abort`. A missing store can turn `unless`/`and` into a false page or a resolved alert.
- Recording groups: `warn` when every rule is safe on partial data, else `abort`. A rule is safe when
  each aggregation and each vector match keeps the cluster label (so one answer holds all of a series'
  inputs: a store serves whole clusters) and nothing negates (`unless`, `absent`), where a missing
  input would add series instead of removing them. Then a store's outage only removes that cluster's
  records, and the dashboards keep the clusters that answered. The SLO event rates negate (they leave
  engines put to sleep out with `unless`), so their groups abort rather than count a sleeping engine's
  503s as errors when the store with its sleep state is missing.

promtool and vmalert reject the field, which is why these files are separate (a test proves that
dropping it gives the Prometheus files back).
"""

from __future__ import annotations

import promql_parser as p

from obspack.promql import token, walk
from obspack.rules.model import AlertRule, RuleGroup

RECORDING_FILE = "thanos/recording-rules.yaml"
ALERTS_FILE = "thanos/alerts.yaml"
FIELD = "partial_response_strategy"
NEGATIONS = frozenset({"unless", "absent", "absent_over_time"})


def safe_on_partial_data(expr: str, cluster_label: str) -> bool:
    """Whether the rule gives right (if fewer) series when some stores do not answer.

    One walk of the expression: on the way back up, each node learns from its operands whether they read
    series, which a vector match needs to know (walking each operand again would cost its subtree again)."""
    safe = True
    reads: list[list[bool]] = [[]]  # per open node: whether each of its operands reads series

    def enter(node: p.Expr) -> bool:
        reads.append([])
        return True

    def leave(node: p.Expr) -> bool:
        nonlocal safe
        operands = reads.pop()
        reads[-1].append(isinstance(node, p.VectorSelector | p.MatrixSelector) or any(operands))
        if isinstance(node, p.AggregateExpr):
            m = node.modifier
            by = m is not None and token(m.type) == "by"
            safe &= m is not None and (cluster_label in m.labels) == by
        elif isinstance(node, p.BinaryExpr):
            safe &= token(node.op) not in NEGATIONS
            matching = node.modifier.matching if node.modifier else None
            if matching is not None and all(operands):  # a table of `vector()` constants joins the same anyway
                safe &= (cluster_label in matching.labels) == (token(matching.type) == "include")
        elif isinstance(node, p.Call):
            safe &= node.func.name not in NEGATIONS
        return True

    walk(p.parse(expr), enter, leave)
    return safe


def partial_response_strategy(group: RuleGroup, cluster_label: str) -> str:
    if any(isinstance(r, AlertRule) for r in group.rules):
        return "abort"
    return "warn" if all(safe_on_partial_data(r.expr, cluster_label) for r in group.rules) else "abort"


def thanos_group(group: RuleGroup, cluster_label: str) -> dict[str, object]:
    out = group.to_dict()
    rules = out.pop("rules")
    return {**out, FIELD: partial_response_strategy(group, cluster_label), "rules": rules}

