"""How many rule-group boundaries lie between raw series and each alert or dashboard target.

On a live Prometheus every group runs on its own timer, so a record read from another group is as old as
that group's last evaluation: up to one interval per group boundary on the way from raw series. A record
made earlier in the reader's own group is fresh (Prometheus evaluates a group's rules in order, each on
the results of the ones before), and a record made later in the same group (or the rule itself) is one
evaluation old, like another group's.

    depth(raw series) = 0
    depth(rule)       = max over what it reads: depth(record) + (0 if made earlier in the same group else 1)
    depth(dashboard)  = max over what it reads: depth(record) + 1
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from obspack.promql import metric_names
from obspack.rules.model import AlertRule, RuleGroup

ALERT_SERIES = ("ALERTS", "ALERTS_FOR_STATE")  # written by alerting rules, read by dashboards


@dataclass(frozen=True)
class Rule:
    group: str
    position: int
    name: str  # record or alert name
    expr: str


def _rules(groups: Sequence[RuleGroup]) -> list[Rule]:
    return [
        Rule(g.name, i, r.alert if isinstance(r, AlertRule) else r.record, r.expr)
        for g in groups
        for i, r in enumerate(g.rules)
    ]


class Chains:
    """Group hops of every rule of a pack (recording and alert groups together)."""

    def __init__(self, groups: Sequence[RuleGroup]) -> None:
        self.rules = _rules(groups)
        self.alerts = {r.alert for g in groups for r in g.rules if isinstance(r, AlertRule)}
        producers: dict[str, Rule] = {}
        for rule in self.rules:
            if rule.name in self.alerts:
                continue
            if rule.name in producers:
                raise ValueError(f"{rule.name} is recorded twice ({producers[rule.name].group}, {rule.group})")
            producers[rule.name] = rule
        self.producers = producers
        self._depth: dict[tuple[str, str], int] = {}

    def _cost(self, reader: Rule | None, name: str, seen: frozenset[str]) -> int:
        if name in ALERT_SERIES:
            return 1 + max((self.depth(r, seen) for r in self.rules if r.name in self.alerts), default=0)
        producer = self.producers.get(name)
        if producer is None:
            return 0
        fresh = reader is not None and producer.group == reader.group and producer.position < reader.position
        return self.depth(producer, seen) + (0 if fresh else 1)

    def depth(self, rule: Rule, seen: frozenset[str] = frozenset()) -> int:
        key = (rule.group, rule.name)
        if key not in self._depth:
            if rule.name in seen:  # a rule reading its own past output: its inputs decide the depth
                return 0
            inner = seen | {rule.name}
            self._depth[key] = max((self._cost(rule, m, inner) for m in metric_names(rule.expr)), default=0)
        return self._depth[key]

    def of(self, name: str) -> int:
        """The depth of a record or an alert by name."""
        return next(self.depth(r) for r in self.rules if r.name == name)

    def of_query(self, expr: str) -> int:
        """A dashboard target's depth: each record it reads is one group boundary away, plus the record's."""
        return max((self._cost(None, m, frozenset()) for m in metric_names(expr)), default=0)

    def path(self, name: str) -> list[str]:
        """The deepest chain ending in a record or an alert, from raw series up (for failure messages)."""
        rule = next(r for r in self.rules if r.name == name)
        chain = [f"{rule.group}/{rule.name}"]
        while True:
            reads = [self.producers[m] for m in metric_names(rule.expr) if m in self.producers and m != rule.name]
            if not reads:
                return chain[::-1]
            rule = max(reads, key=self.depth)
            chain.append(f"{rule.group}/{rule.name}")


def dashboard_targets(dashboards: Iterable[tuple[str, dict[str, object]]]) -> list[tuple[str, str]]:
    """(where, expr) of every panel target and query variable of the rendered dashboards."""
    out = []
    for name, model in dashboards:
        stack = list(model.get("panels", []))  # type: ignore[arg-type]
        while stack:
            panel = stack.pop(0)
            stack.extend(panel.get("panels", []) or [])
            for target in panel.get("targets", []) or []:
                if target.get("expr"):
                    out.append((f"{name} / {panel.get('title')} [{target.get('refId')}]", target["expr"]))
        for variable in model.get("templating", {}).get("list", []):  # type: ignore[union-attr]
            query = variable.get("query")
            if variable.get("type") == "query" and isinstance(query, str) and query.startswith("label_values("):
                out.append((f"{name} / ${variable['name']}", query.removeprefix("label_values(").rsplit(",", 1)[0]))
    return out
