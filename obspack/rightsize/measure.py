"""Ask the questions of queries.py and keep the answers as plain rows: quantity -> {label values: value}.

Answers are treated as hostile: a row without a label map, a value that is not a number, a label that is
not text is counted and left out; NaN and infinite values (a quantile over nothing) are left out. A question
the server refuses or times out on is a `Failure` for that quantity only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from obspack.doctor.api import PrometheusAPI, QueryFailed
from obspack.rightsize.model import Failure
from obspack.rightsize.queries import Query

Key = tuple[str, ...]
Rows = dict[Key, float]


@dataclass(frozen=True)
class Measurements:
    rows: Mapping[str, Rows]
    failures: tuple[Failure, ...] = ()
    malformed: int = 0  # rows left out because they were not Prometheus API rows

    def get(self, name: str) -> Rows:
        return dict(self.rows.get(name, {}))


def parse(result: Any, keys: tuple[str, ...]) -> tuple[Rows, int]:
    """Rows keyed by the values of `keys` ('' when a label is absent); duplicates keep the highest value."""
    if not isinstance(result, list):
        return {}, 1
    rows: Rows = {}
    malformed = 0
    for row in result:
        metric = row.get("metric") if isinstance(row, dict) else None
        value = row.get("value") if isinstance(row, dict) else None
        if not isinstance(metric, dict) or not isinstance(value, list | tuple) or len(value) != 2:
            malformed += 1
            continue
        labels = [metric.get(k, "") for k in keys]
        if not all(isinstance(v, str) for v in labels):
            malformed += 1
            continue
        try:
            number = float(value[1])
        except (TypeError, ValueError):
            malformed += 1
            continue
        if not math.isfinite(number):
            continue
        key = tuple(labels)
        rows[key] = max(rows.get(key, number), number)
    return rows, malformed


def measure(api: PrometheusAPI, queries: Iterable[Query], at: float) -> Measurements:
    """Every query at `at`, at most the connection's concurrency in flight."""
    work = list(queries)
    answers = api.map(lambda q: api.query(q.expr, at), work)
    rows: dict[str, Rows] = {}
    failures = []
    malformed = 0
    for query, answer in zip(work, answers):
        if isinstance(answer, QueryFailed):
            failures.append(Failure(query.name, str(answer)))
            continue
        rows[query.name], bad = parse(answer, query.keys)
        malformed += bad
    return Measurements(rows, tuple(failures), malformed)


def merge(*parts: Measurements) -> Measurements:
    rows: dict[str, Rows] = {}
    for part in parts:
        rows.update(part.rows)
    return Measurements(
        rows,
        tuple(f for part in parts for f in part.failures),
        sum(part.malformed for part in parts),
    )
