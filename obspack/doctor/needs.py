"""What the pack reads, derived from `build(cfg)` with a real PromQL parser: no list of names or queries here.

Every rule, alert and dashboard query becomes a tree of needs. A leaf is a raw selector (with its range
when a function reads a window of it); a `Record` is a series one of the pack's own recording rules
writes, and is checked through that rule. `or` needs any one side, `and` and arithmetic need both sides,
`unless` needs its left side only, and `absent()` needs nothing (it fires when its input is missing).

A record may be written by several rules (one per SLO, one per model branch), each setting its own static
labels. `written(rule)` is what one rule writes, as a single expression: the records it reads replaced by
what their rules return (each with its static labels set, the rules of one record joined with `or`, only
those whose labels can satisfy the reader's matchers, and the reader's other matchers applied in PromQL),
so the doctor can evaluate what a rule would return on a server where it is not loaded. A record read over
a window is written out over its last two minutes only: on a server its history starts when its rule
does, so the doctor asks whether it has data now, and how much history it has is a question of its own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import promql_parser as pp

from obspack.durations import format_s
from obspack.pack import Pack
from obspack.pack.walk import Target, Variable, targets, variables
from obspack.promql import Matcher, grafana_to_promql, hide_strings, may_match, operands
from obspack.rules.model import AlertRule, RuleGroup

_OPS = {
    "MatchOp.Equal": "=",
    "MatchOp.NotEqual": "!=",
    "MatchOp.Re": "=~",
    "MatchOp.NotRe": "!~",
}  # by str(op)
MATCH_ALL = ".*"
Labels = tuple[tuple[str, str], ...]  # static labels of a rule, sorted
RECENT = "[2m:1m]"  # a written-out record read over a window: two evaluations, enough for any function
MARK = "obspack_doctor_match"  # a label a regex matcher puts on the series it keeps, for `and on`
# A record whose rule, with the records it reads written out, would be longer than this is judged by its
# inputs (present or not) and not evaluated: the cost records read records that read records, and written
# out they grow to hundreds of KiB. A server with a lower cap (VictoriaMetrics' -search.maxQueryLen, 16 KiB
# by default) refuses some shorter ones: those are judged by their inputs too (fit.evaluate_records).
MAX_WRITTEN = 64 * 1024
TOO_LONG = re.compile(r"too long query|query is too long|maxQueryLen", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def _regex(value: str) -> re.Pattern[str] | None:
    try:
        return re.compile(value, re.S)
    except re.error:
        return None


def matches(matcher: Matcher, value: str) -> bool:
    """Whether a label value (empty when the label is missing) satisfies a matcher, as Prometheus decides."""
    _, op, expected = matcher
    if op in ("=", "!="):
        return (value == expected) == (op == "=")
    pattern = _regex(expected)
    found = pattern is not None and pattern.fullmatch(value) is not None
    return found == (op == "=~")


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@dataclass(frozen=True, order=True)
class Selector:
    """A metric name and label matchers; matchers that match every value (`=~".*"`) are left out."""

    metric: str
    matchers: tuple[Matcher, ...] = ()

    @classmethod
    def of(cls, node: pp.VectorSelector) -> Selector:
        kept = []
        metric = node.name or ""
        for m in node.matchers.matchers:
            op = _OPS[str(m.op)]
            if m.name == "__name__" and op == "=":
                metric = m.value
            elif not (op == "=~" and m.value == MATCH_ALL):
                kept.append((m.name, op, m.value))
        return cls(metric, tuple(sorted(set(kept))))

    def __str__(self) -> str:
        return self.text()

    def text(self, longest: int | None = None) -> str:
        """PromQL; with `longest`, matcher values past that length are cut short (for reports)."""

        def value(v: str) -> str:
            return _quote(v) if longest is None or len(v) <= longest else _quote(v[:longest]) + "..."

        inner = ", ".join(f"{label}{op}{value(v)}" for label, op, v in self.matchers)
        if not self.metric:
            return "{" + inner + "}"
        return f"{self.metric}{{{inner}}}" if inner else self.metric

    def accepts(self, labels: Mapping[str, str]) -> bool:
        return all(matches(m, labels.get(m[0], "")) for m in self.matchers)


# ---------------------------------------------------------------------------------------------------
# Needs


@dataclass(frozen=True)
class Leaf:
    selector: Selector
    range_s: int | None = None  # a function reads this window of it: it needs two samples there

    def __str__(self) -> str:
        return self.text()

    def text(self, longest: int | None = None) -> str:
        window = f"[{format_s(self.range_s, coarse=True)}]" if self.range_s else ""
        return self.selector.text(longest) + window


@dataclass(frozen=True)
class Record:
    """A series written by one of the pack's recording rules, with the matchers the reader puts on it."""

    name: str
    selector: Selector
    range_s: int | None = None  # the reader takes this window of it


@dataclass(frozen=True)
class AllOf:
    parts: tuple[Need, ...] = ()


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[Need, ...] = ()


Need = Leaf | Record | AllOf | AnyOf
NOTHING = AllOf()


def all_of(*parts: Need) -> Need:
    flat: list[Need] = []
    for part in parts:
        for p in part.parts if isinstance(part, AllOf) else (part,):
            if p not in flat:
                flat.append(p)
    return flat[0] if len(flat) == 1 else AllOf(tuple(flat))


def any_of(*parts: Need) -> Need:
    if any(p == NOTHING for p in parts):
        return NOTHING
    flat: list[Need] = []
    for part in parts:
        for p in part.parts if isinstance(part, AnyOf) else (part,):
            if p not in flat:
                flat.append(p)
    return flat[0] if len(flat) == 1 else AnyOf(tuple(flat))


_INVERTING = {"absent", "absent_over_time"}


def needs_of(node: pp.Expr, records: frozenset[str]) -> Need:
    """The needs of a parsed expression; `records` are the names the pack's recording rules write."""
    if isinstance(node, pp.VectorSelector | pp.MatrixSelector):
        vector = node if isinstance(node, pp.VectorSelector) else node.vector_selector
        selector = Selector.of(vector)
        window = int(node.range.total_seconds()) if isinstance(node, pp.MatrixSelector) else None
        if selector.metric in records:
            return Record(selector.metric, selector, window)
        return Leaf(selector, window)
    if isinstance(node, pp.ParenExpr | pp.UnaryExpr | pp.SubqueryExpr | pp.AggregateExpr):
        return needs_of(node.expr, records)
    if isinstance(node, pp.Call):
        if node.func.name in _INVERTING:
            return NOTHING
        return all_of(*(needs_of(a, records) for a in node.args if isinstance(a, pp.Expr)))
    if isinstance(node, pp.BinaryExpr):
        op = str(node.op)
        left, right = needs_of(node.lhs, records), needs_of(node.rhs, records)
        if op == "or":
            return any_of(left, right)
        if op == "unless":
            return left
        return all_of(left, right)
    return NOTHING


def walk(need: Need) -> Iterator[Need]:
    """Every node of a need tree, depth first."""
    yield need
    if isinstance(need, AllOf | AnyOf):
        for part in need.parts:
            yield from walk(part)


def leaves(need: Need) -> Iterator[Leaf]:
    return (n for n in walk(need) if isinstance(n, Leaf))


def record_refs(need: Need) -> Iterator[Record]:
    return (n for n in walk(need) if isinstance(n, Record))


def alternatives(need: Need) -> Iterator[AnyOf]:
    """Every `or` in the tree (to tell which inputs have a fallback)."""
    return (n for n in walk(need) if isinstance(n, AnyOf))


# ---------------------------------------------------------------------------------------------------
# The pack


class CannotInline(ValueError):
    pass


@dataclass(frozen=True)
class Rule:
    group: str
    name: str  # the record or alert name
    expr: str
    need: Need
    alert: bool
    labels: Labels = ()  # the static labels it sets (an alert's severity included)

    @property
    def title(self) -> str:
        """Its name, with its static labels when it has any (what tells it from other rules of the name)."""
        return str(Selector(self.name, tuple((k, "=", v) for k, v in self.labels)))


@dataclass(frozen=True)
class PackNeeds:
    groups: tuple[RuleGroup, ...]
    records: Mapping[str, tuple[Rule, ...]]  # record name -> every rule that writes it, in file order
    alerts: tuple[Rule, ...]
    targets: tuple[Target, ...]
    variables: tuple[Variable, ...]

    @functools.cached_property
    def _record_names(self) -> frozenset[str]:
        return frozenset(self.records)

    @property
    def recording_rules(self) -> tuple[Rule, ...]:
        return tuple(r for rules in self.records.values() for r in rules)

    def need(self, expr: str) -> Need:
        return needs_of(pp.parse(expr), self._record_names)

    def written(self, rule: Rule, keep: frozenset[str] = frozenset()) -> str:
        """What `rule` writes, as one expression: the records it reads written out, except those in `keep`
        (records the server already holds, read as they are), and its own static labels set."""
        producers = tuple((r.name, r.labels, r.expr) for r in self.recording_rules if r.name not in keep)
        return _compact(pp.parse(_labelled(_write(rule.expr, producers), rule.labels)))

    def record_labels(self) -> dict[str, tuple[str, ...]]:
        """Per record, the labels its rules set and its readers filter on or read values of (sorted)."""
        labels = {
            name: {label for r in rules for label, _ in r.labels} for name, rules in self.records.items()
        }
        trees = [r.need for r in (*self.recording_rules, *self.alerts)]
        trees += [self.need(grafana_to_promql(t.expr)) for t in self.targets]
        for ref in (ref for tree in trees for ref in record_refs(tree)):
            labels[ref.name] |= {m[0] for m in ref.selector.matchers}
        for variable in self.variables:
            for ref in record_refs(self.need(grafana_to_promql(variable.selector))):
                labels[ref.name] |= {m[0] for m in ref.selector.matchers} | ({variable.label} - {""})
        return {name: tuple(sorted(found)) for name, found in labels.items()}


# ---------------------------------------------------------------------------------------------------
# Writing records out

Producer = tuple[str, Labels, str]  # (record, static labels, expression) of one recording rule


def _replacement(value: str) -> str:
    """A label value as label_replace's replacement (which would expand `$1`)."""
    return _quote(value.replace("$", "$$"))


def _labelled(expr: str, labels: Labels) -> str:
    """`expr` with static labels set on every series, as a rule's `labels` does."""
    for label, value in labels:
        expr = f'label_replace({expr}, "{label}", {_replacement(value)}, "", "")'
    return expr


def _one(label: str, value: str) -> str:
    """A single series with one label: what `and on (label)` keeps series by."""
    return f'label_replace(vector(1), "{label}", {_replacement(value)}, "", "")'


def _narrowed(expr: str, matcher: Matcher) -> str:
    """`expr` with a reader's matcher applied: an (in)equality through `and`/`unless on (label)`; a regex
    through a mark label_replace sets where it matches (anchored, as a matcher), then removed."""
    label, op, value = matcher
    keep = "and" if op in ("=", "=~") else "unless"
    if op in ("=", "!="):
        return f"({expr}) {keep} on ({label}) {_one(label, value)}"
    marked = f'label_replace({expr}, "{MARK}", "1", "{label}", {_quote(value)})'
    return f'label_replace({marked} {keep} on ({MARK}) {_one(MARK, "1")}, "{MARK}", "", "", "")'


@functools.lru_cache(maxsize=1024)
def _write(expr: str, producers: tuple[Producer, ...]) -> str:
    """`expr` with every record of `producers` it reads replaced by what the rules of that record write."""
    by_name: dict[str, list[Producer]] = {}
    for producer in producers:
        by_name.setdefault(producer[0], []).append(producer)

    def written_out(node: pp.Expr) -> str | None:
        """What replaces a selector of a record (the union of its rules' expressions), else None."""
        vector = _vector(node)
        if not isinstance(vector, pp.VectorSelector) or vector.name not in by_name:
            return None
        selector = Selector.of(vector)
        if vector.offset or vector.at:
            raise CannotInline(
                f"it reads {selector} with offset or @, which a written-out record cannot take"
            )
        if vector.matchers.or_matchers:
            raise CannotInline(f"it reads {selector} with `or` between its matchers")
        parts = []
        for _, labels, inner in by_name[vector.name]:
            if not may_match(selector.matchers, dict(labels)):
                continue
            part = _labelled(_write(inner, producers), labels)
            for matcher in (m for m in selector.matchers if m[0] not in dict(labels)):
                part = _narrowed(part, matcher)
            parts.append(part)
        if not parts:
            raise CannotInline(f"no rule of the pack writes {selector}")
        union = f"({parts[0]})" if len(parts) == 1 else "(" + " or ".join(f"({p})" for p in parts) + ")"
        return union + RECENT if isinstance(node, pp.MatrixSelector) else union

    tree = pp.parse(expr)
    found: list[tuple[pp.Expr, str]] = []

    def visit(node: pp.Expr) -> None:  # the nodes promql_parser.transform would visit, in its order
        text = written_out(node)
        if text is not None:
            found.append((node, text))
            return
        for child in operands(node):
            visit(child)

    visit(tree)
    if not found:
        return _compact(tree)
    spliced = _spliced(expr, found)
    if spliced is not None:
        return _compact(pp.parse(spliced))

    def expand(node: pp.Expr) -> pp.Expr | None:
        text = written_out(node)
        return None if text is None else pp.parse(text)

    return _compact(pp.transform(tree, pre_visit=expand))


def _spliced(expr: str, found: list[tuple[pp.Expr, str]]) -> str | None:
    """`expr` with the text of each found selector replaced, or None where the text cannot be matched to
    them one for one (then promql_parser.transform does it: the same result, many times slower on the long
    expressions written-out records make, since it converts every node it visits from Rust again)."""
    hidden, restore = hide_strings(expr)
    names = "|".join(sorted({re.escape(_name(node)) for node, _ in found}, key=len, reverse=True))
    spans = [m.span() for m in re.finditer(rf"(?<![\w:])(?:{names})(?![\w:])\s*(?:\{{[^{{}}]*\}})?(?:\s*\[[^\]:]*\])?", hidden)]
    if len(spans) != len(found):
        return None
    out, at = [], 0
    for (start, end), (node, text) in zip(spans, found):
        try:
            same = str(pp.parse(restore(hidden[start:end]))) == str(node)
        except ValueError:
            same = False
        if not same:
            return None
        out += [restore(hidden[at:start]), text]
        at = end
    return "".join([*out, restore(hidden[at:])])


def _vector(node: pp.Expr) -> pp.Expr:
    """The selector a node reads: a range's own vector selector, else the node itself."""
    return node.vector_selector if isinstance(node, pp.MatrixSelector) else node


def _name(node: pp.Expr) -> str:
    return _vector(node).name  # type: ignore[attr-defined, no-any-return]


def _compact(expr: pp.Expr) -> str:
    """The shortest faithful text of an expression: the parser's one-line form when it parses back to the
    same tree (it drops a subquery's colon), else the pretty-printed one. Servers cap query length
    (VictoriaMetrics: 16 KiB by default), and written-out records are long."""
    pretty = expr.prettify()
    short = str(expr)
    try:
        return short if pp.parse(short).prettify() == pretty else pretty
    except ValueError:
        return pretty


def _static_labels(rule: object) -> Labels:
    return tuple(sorted(dict(rule.to_dict().get("labels", {})).items()))  # type: ignore[attr-defined]


def read_pack(pack: Pack) -> PackNeeds:
    names = frozenset(
        r.record for g in pack.recording_groups for r in g.rules if not isinstance(r, AlertRule)
    )

    def rule(group: RuleGroup, r: object) -> Rule:
        alert = isinstance(r, AlertRule)
        name = r.alert if alert else r.record  # type: ignore[attr-defined]
        expr = r.expr  # type: ignore[attr-defined]
        return Rule(group.name, name, expr, needs_of(pp.parse(expr), names), alert, _static_labels(r))

    records: dict[str, tuple[Rule, ...]] = {}
    for g in pack.recording_groups:
        for r in (rule(g, x) for x in g.rules if not isinstance(x, AlertRule)):
            records[r.name] = (*records.get(r.name, ()), r)
    alerts = tuple(rule(g, x) for g in pack.alert_groups for x in g.rules)
    return PackNeeds(
        groups=pack.recording_groups + pack.alert_groups,
        records=records,
        alerts=alerts,
        targets=tuple(targets(pack)),
        variables=tuple(variables(pack)),
    )
