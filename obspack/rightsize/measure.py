"""Ask the questions of queries.py and keep the answers as plain rows: quantity -> {label values: value}, and
for the range questions (day by day, step by step) quantity -> {label values: {time: value}}.

Answers are treated as hostile: a row without a label map, a value that is not a number, a label that is
not text is counted and left out; NaN and infinite values (a quantile over nothing) are left out, and so
are negative ones (no quantity asked can be below zero; a broken exporter's can). A question the server
refuses or times out on is a `Failure` for that quantity only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from obspack.doctor.api import PrometheusAPI, QueryFailed
from obspack.rightsize.model import Failure
from obspack.rightsize.queries import Query

Key = tuple[str, ...]
Rows = dict[Key, float]
Days = dict[Key, dict[float, float]]


@dataclass(frozen=True)
class Measurements:
    rows: Mapping[str, Rows]
    failures: tuple[Failure, ...] = ()
    malformed: int = 0  # rows left out because they were not Prometheus API rows
    days: Mapping[str, Days] = field(default_factory=dict)
    dropped: int = 0  # values left out because they were infinite or negative

    def get(self, name: str) -> Rows:
        return dict(self.rows.get(name, {}))


def _labels(row: Any, keys: tuple[str, ...]) -> Key | None:
    metric = row.get("metric") if isinstance(row, dict) else None
    if not isinstance(metric, dict):
        return None
    labels = [metric.get(k, "") for k in keys]
    return tuple(labels) if all(isinstance(v, str) for v in labels) else None


def _number(value: Any) -> float | None:
    """The sample's value, or None when it is not a number (a hostile answer)."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    try:
        return float(value[1])
    except (TypeError, ValueError):
        return None


def _kept(number: float, most: float) -> bool:
    """NaN (a quantile over nothing) is no answer; infinite, negative and absurdly large values (`most`)
    are nonsense here."""
    return math.isfinite(number) and 0 <= number <= most


def parse(result: Any, keys: tuple[str, ...], most: float = 2.0**53) -> tuple[Rows, int, int]:
    """Rows keyed by the values of `keys` ('' when a label is absent); duplicates keep the highest value.
    With the count of malformed rows, and of infinite or negative values left out."""
    if not isinstance(result, list):
        return {}, 1, 0
    rows: Rows = {}
    malformed = dropped = 0
    for row in result:
        key = _labels(row, keys)
        number = _number(row.get("value")) if isinstance(row, dict) else None
        if key is None or number is None:
            malformed += 1
            continue
        if not _kept(number, most):
            dropped += not math.isnan(number)
            continue
        rows[key] = max(rows.get(key, number), number)
    return rows, malformed, dropped


def parse_days(result: Any, keys: tuple[str, ...], most: float = 2.0**53) -> tuple[Days, int, int]:
    """A range query's series as {key: {time: value}}; duplicates keep the highest value per time."""
    if not isinstance(result, list):
        return {}, 1, 0
    days: Days = {}
    malformed = dropped = 0
    for row in result:
        key = _labels(row, keys)
        values = row.get("values") if isinstance(row, dict) else None
        if key is None or not isinstance(values, list):
            malformed += 1
            continue
        found = days.setdefault(key, {})
        for value in values:
            number = _number(value)
            try:
                at = float(value[0]) if number is not None else math.nan
            except (TypeError, ValueError):
                at = math.nan
            if number is None or not math.isfinite(at):
                malformed += 1
                continue
            if not _kept(number, most):
                dropped += not math.isnan(number)
                continue
            found[at] = max(found.get(at, number), number)
    return days, malformed, dropped


def measure(api: PrometheusAPI, queries: Iterable[Query], at: float, window_s: int = 0) -> Measurements:
    """Every query at `at` (or its own time), at most the connection's concurrency in flight; the range ones
    over the window (`window_s`), one point every `every_s` ending at `at`."""
    work = list(queries)

    def ask(q: Query) -> Any:
        if q.every_s:
            points = max(1, window_s // q.every_s)
            return api.query_range(q.expr, at - (points - 1) * q.every_s, at, q.every_s)
        return api.query(q.expr, q.at if q.at is not None else at)

    answers = api.map(ask, work)
    rows: dict[str, Rows] = {}
    days: dict[str, Days] = {}
    failures = []
    malformed = dropped = 0
    for query, answer in zip(work, answers):
        if isinstance(answer, QueryFailed):
            failures.append(Failure(query.name, str(answer)))
            continue
        if query.every_s:
            days[query.name], bad, nonsense = parse_days(answer, query.keys, query.most)
        else:
            rows[query.name], bad, nonsense = parse(answer, query.keys, query.most)
        malformed += bad
        dropped += nonsense
    return Measurements(rows, tuple(failures), malformed, days, dropped)


def merge(*parts: Measurements) -> Measurements:
    rows: dict[str, Rows] = {}
    days: dict[str, Days] = {}
    for part in parts:
        rows.update(part.rows)
        days.update(part.days)
    return Measurements(
        rows,
        tuple(f for part in parts for f in part.failures),
        sum(part.malformed for part in parts),
        days,
        sum(part.dropped for part in parts),
    )
