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

from obspack.promql import Matcher, may_match, selectors
from obspack.rules.model import AlertRule, RuleGroup

ALERT_SERIES = ("ALERTS", "ALERTS_FOR_STATE")  # written by alerting rules, read by dashboards


@dataclass(frozen=True)
class Rule:
    group: str
    position: int
    name: str  # record or alert name
    expr: str
    labels: tuple[tuple[str, str], ...] = ()  # a record's static labels: which reads it can serve


def _rules(groups: Sequence[RuleGroup]) -> list[Rule]:
    return [
        Rule(g.name, i, r.alert, r.expr) if isinstance(r, AlertRule) else Rule(g.name, i, r.record, r.expr, r.labels)
        for g in groups
        for i, r in enumerate(g.rules)
    ]


class Chains:
    """Group hops of every rule of a pack (recording and alert groups together). A record may be written by
    several rules (one per label set, e.g. per SLO); a read costs as much as the deepest writer whose
    static labels its matchers can match."""

    def __init__(self, groups: Sequence[RuleGroup]) -> None:
        self.rules = _rules(groups)
        self.alerts = {r.alert for g in groups for r in g.rules if isinstance(r, AlertRule)}
        self.producers: dict[str, list[Rule]] = {}
        for rule in self.rules:
            if rule.name not in self.alerts:
                self.producers.setdefault(rule.name, []).append(rule)
        self._depth: dict[tuple[str, int], int] = {}

    def _via(self, reader: Rule | None, producer: Rule, seen: frozenset[tuple[str, int]]) -> int:
        fresh = reader is not None and producer.group == reader.group and producer.position < reader.position
        return self.depth(producer, seen) + (0 if fresh else 1)

    def _writers(self, name: str, matchers: tuple[Matcher, ...]) -> list[Rule]:
        return [p for p in self.producers.get(name, []) if may_match(matchers, dict(p.labels))]

    def _cost(self, reader: Rule | None, read: tuple[str, tuple[Matcher, ...]], seen: frozenset[tuple[str, int]]) -> int:
        name, matchers = read
        if name in ALERT_SERIES:
            return 1 + max((self.depth(r, seen) for r in self.rules if r.name in self.alerts), default=0)
        return max((self._via(reader, p, seen) for p in self._writers(name, matchers)), default=0)

    def depth(self, rule: Rule, seen: frozenset[tuple[str, int]] = frozenset()) -> int:
        key = (rule.group, rule.position)
        if key not in self._depth:
            if key in seen:  # a rule reading its own past output: its other inputs decide the depth
                return 0
            inner = seen | {key}
            self._depth[key] = max((self._cost(rule, read, inner) for read in selectors(rule.expr)), default=0)
        return self._depth[key]

    def of(self, name: str) -> int:
        """The depth of a record or an alert by name (its deepest rule)."""
        return max(self.depth(r) for r in self.rules if r.name == name)

    def of_query(self, expr: str) -> int:
        """A dashboard target's depth: each record it reads is one group boundary away, plus the record's."""
        return max((self._cost(None, read, frozenset()) for read in selectors(expr)), default=0)

    def path(self, name: str) -> list[str]:
        """The deepest chain ending in a record or an alert, from raw series up (for failure messages)."""
        rule = max((r for r in self.rules if r.name == name), key=self.depth)
        chain = [f"{rule.group}/{rule.name}"]
        while True:
            reads = [p for name, m in selectors(rule.expr) if name != rule.name for p in self._writers(name, m)]
            if not reads:
                return chain[::-1]
            rule = max(reads, key=lambda p: self._via(rule, p, frozenset()))
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
