"""Label values that satisfy the config's selectors, for the series of the shipped promtool tests.

The incidents of the tests (unit_tests.py, slo_tests.py) are written for a fleet without selectors:
cluster `prod-a`, namespace `inference`, pods `llama-0`, ... A user's selectors narrow what the rules
read (`namespace=~"inference-.*"`, `pod=~"vllm-\\d+"`, `job="vllm"`), so the same incidents are moved
into the part of the label space the selectors keep, without changing their meaning:

- Labels that several sources share and join on (the cluster label, namespace, pod, container, node,
  model, engine, each with the names DCGM gives them) form families. Within one test case every value
  of a family is mapped the same way everywhere, and distinct values stay distinct: a value the
  selectors accept stays as it is, another gets the first acceptable one not taken, preferring the
  original with a prefix or suffix the regex asks for (`inference` becomes `inference-inference`).
  An empty value means an absent label and is never changed.
- Labels that tell sources apart (job, instance, metrics_path, ...) are per source: each source's series
  get a value its own selector accepts, preferring the one a real exporter would give them.

Candidates for a regex come from sre_yield, which enumerates a regex's matches in order; each is
checked against every matcher of its label (Prometheus anchors regexes, so the whole value must match).
When a family needs more distinct values than its matchers allow (`engine="0"` and a test of two
engines), that test case cannot be built: `Unsatisfiable` says why, and the render reports it. A single
cluster is the exception handled above this module: an incident whose second cluster only holds quiet
twins is built without it (`Incident.in_one_cluster` in alerts.py), and the SLO scenarios put their other
clusters in namespaces of their own (`_places` in slos.py).
"""

from __future__ import annotations

import json
import re
import string
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

with warnings.catch_warnings():  # sre_yield reads the regex parser through the deprecated sre_parse alias
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_yield

from obspack.promql import Matcher, selectors

# Label names that hold the same kind of value in different sources (a pod is `pod` in vLLM and
# kube-state-metrics series, `exported_pod` or `pod_name` in DCGM's, depending on its mode).
FAMILIES = {
    "namespace": "namespace", "exported_namespace": "namespace", "pod_namespace": "namespace",
    "pod": "pod", "exported_pod": "pod", "pod_name": "pod",
    # kube-state-metrics names owners by name: a LeaderWorkerSet worker's StatefulSet is its leader pod's
    # name, so owners and ReplicaSets share the pods' values (a mapped leader stays its workers' owner)
    "owner_name": "pod", "replicaset": "pod",
    "container": "container", "exported_container": "container", "container_name": "container",
    "Hostname": "node", "node": "node",
    "UUID": "gpu", "uuid": "gpu",
}  # fmt: skip
# Labels whose values differ between sources by nature: never mapped across sources.
PER_SOURCE = frozenset({"job", "instance", "metrics_path", "endpoint", "service", "__address__"})
_CHARSET = string.ascii_lowercase + string.digits + "-"
_TRIES = 2000  # candidates looked at per value before giving up
_FLAGS = re.compile(r"^\(\?([imsU]+)\)")


class Unsatisfiable(Exception):
    """No label values can satisfy the selectors for this test; the message says which label and why."""


def parse(matchers: str) -> tuple[Matcher, ...]:
    """The matchers of a config selector (label matchers without braces)."""
    if not matchers:
        return ()
    found = selectors(f"obspack_probe{{{matchers}}}")
    return found[0][1] if found else ()


def accepts(value: str, matchers: Iterable[Matcher]) -> bool:
    """Whether a label with this value (empty: absent) passes every matcher, as Prometheus decides."""
    for _, op, pattern in matchers:
        if op in ("=", "!="):
            hit = value == pattern
        else:
            hit = re.fullmatch(pattern, value) is not None
        if hit != (op in ("=", "=~")):
            return False
    return True


def _generated(pattern: str) -> Iterator[str]:
    """Strings the pattern takes. Leading flags are dropped, not passed on: sre_yield supports none of
    them, and what the pattern takes without them it takes with them (`(?i)` and `(?s)` only widen it, and
    the strings hold no line break for `(?m)` to matter); `pick` checks each candidate anyway."""
    found = _FLAGS.match(pattern)
    if found:
        pattern = pattern[found.end():]
    try:
        yield from sre_yield.AllStrings(pattern, charset=_CHARSET, max_count=8)
    except (re.error, ValueError, TypeError, OverflowError, sre_yield.ParseError):
        return


def candidates(matchers: tuple[Matcher, ...], preferred: str) -> Iterator[str]:
    """Values to try, most readable first: the preferred one, then each string the positive matchers
    allow with and without the preferred one around it."""
    yield preferred
    positive = [pattern for _, op, pattern in matchers if op in ("=", "=~")]
    if not positive:
        for i in range(_TRIES):
            yield f"{preferred}-{i}" if preferred else f"x{i}"
        return
    op, pattern = next((op, p) for _, op, p in matchers if op in ("=", "=~"))
    generated = [pattern] if op == "=" else list(islice(_generated(pattern), _TRIES))
    for g in generated[:50]:
        if preferred:
            yield f"{g}{preferred}"
            yield f"{preferred}{g}"
    yield from generated


def pick(matchers: tuple[Matcher, ...], preferred: str, taken: set[str], what: str) -> str:
    """A value every matcher accepts, not in `taken`, as close to `preferred` as the matchers allow."""
    seen = 0
    for value in candidates(matchers, preferred):
        seen += 1
        if value not in taken and value != "" and accepts(value, matchers):
            return value
        if seen > 4 * _TRIES:
            break
    shown = ", ".join(f"{name}{op}{literal(p)}" for name, op, p in matchers)
    if taken:
        raise Unsatisfiable(f"{what}: the selectors ({shown}) leave fewer than {len(taken) + 1} values, the test needs that many")
    raise Unsatisfiable(f"{what}: no value obspack can find satisfies {shown}")


def family(label: str, cluster_label: str) -> str | None:
    """The family a label's values belong to, or None for a per-source label."""
    if label in PER_SOURCE:
        return None
    if label == cluster_label:
        return "cluster"
    return FAMILIES.get(label, label)


@dataclass
class Constraints:
    """The config's selectors, as matchers per source and per family."""

    cluster_label: str
    sources: dict[str, tuple[Matcher, ...]]
    families: dict[str, tuple[Matcher, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        merged: dict[str, list[Matcher]] = {}
        for matchers in self.sources.values():
            for m in matchers:
                name = family(m[0], self.cluster_label)
                if name is not None:
                    merged.setdefault(name, []).append(m)
        self.families = {name: tuple(ms) for name, ms in merged.items()}

    @classmethod
    def of(cls, cluster_label: str, sources: dict[str, str]) -> Constraints:
        return cls(cluster_label, {source: parse(text) for source, text in sources.items()})

    def _by_label(self, source: str) -> dict[str, tuple[Matcher, ...]]:
        by_label: dict[str, list[Matcher]] = {}
        for m in self.sources.get(source, ()):
            by_label.setdefault(m[0], []).append(m)
        return {label: tuple(ms) for label, ms in by_label.items()}

    def source_labels(self, source: str, preferred: dict[str, str]) -> dict[str, str]:
        """The per-source labels (job, instance, ...) to put on every series of a source so that its
        selector accepts them; `preferred` holds what a real exporter sets."""
        out = {}
        for label, matchers in self._by_label(source).items():
            if family(label, self.cluster_label) is not None:
                continue
            value = preferred.get(label, "")
            if not accepts(value, matchers):
                value = pick(matchers, value, set(), f"selectors.{source}: label {label}")
            if value:
                out[label] = value
        return out

    def fill(self, source: str, labels: dict[str, str]) -> dict[str, str]:
        """A family label the source's selector requires but the series lacks, added (the same value on
        every series of the source)."""
        missing = {
            label: pick(matchers, "", set(), f"selectors.{source}: label {label}")
            for label, matchers in self._by_label(source).items()
            if not labels.get(label) and family(label, self.cluster_label) is not None and not accepts("", matchers)
        }
        return {**labels, **missing} if missing else labels

    def mapping(self, labelsets: Iterable[dict[str, str]]) -> Mapping:
        """The value map of one test case, from every label set it uses."""
        values: dict[str, list[str]] = {}
        for labels in labelsets:
            for label, value in labels.items():
                name = family(label, self.cluster_label)
                if name in self.families and value and value not in values.setdefault(name, []):
                    values[name].append(value)
        table: dict[str, dict[str, str]] = {}
        for name, seen in values.items():
            matchers = self.families[name]
            kept = {v for v in seen if accepts(v, matchers)}
            taken = set(kept)
            table[name] = {v: v for v in kept}
            for v in seen:
                if v not in kept:
                    shown = self.cluster_label if name == "cluster" else name
                    table[name][v] = pick(matchers, v, taken, f"label {shown!r}")
                    taken.add(table[name][v])
        return Mapping(self.cluster_label, table)


@dataclass(frozen=True)
class Mapping:
    """Moves one test case's label values into what the selectors accept."""

    cluster_label: str
    table: dict[str, dict[str, str]]

    def value(self, label: str, value: str) -> str:
        name = family(label, self.cluster_label)
        return self.table.get(name or "", {}).get(value, value)

    def labels(self, labels: dict[str, str]) -> dict[str, str]:
        return {k: self.value(k, v) for k, v in labels.items()}


def literal(value: str) -> str:
    """A PromQL string literal of a value."""
    return json.dumps(value, ensure_ascii=False)
