"""The shapes of the answers the doctor reads from the Prometheus HTTP API, checked with pydantic.

Every answer is checked before any of it is used: the envelope (`status`, `data`, `errorType`, `error`),
then the `data` of its endpoint. The doctor's code then indexes into plain dicts and lists that are known
to hold what it expects. Fields it does not read are dropped; fields it reads that a backend may leave out
are optional. Sample values are strings that parse as numbers (NaN and +Inf included, as Prometheus writes
them); timestamps are finite numbers; label names and values are strings.

A wrong shape raises `WrongShape` naming where in the answer it is, in one line.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, NotRequired

from pydantic import AfterValidator, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict


class WrongShape(Exception):
    """An answer that is not in the shape its endpoint has; the message says where."""


def _number(text: str) -> str:
    float(text)  # ValueError: pydantic reports it at its place in the answer
    return text


Timestamp = Annotated[float, Field(allow_inf_nan=False)]
SampleValue = Annotated[str, AfterValidator(_number)]
Point = tuple[Timestamp, SampleValue]
Labels = dict[str, str]


class Envelope(TypedDict):
    status: Literal["success", "error"]
    data: NotRequired[Any]
    errorType: NotRequired[str | None]
    error: NotRequired[str | None]
    msg: NotRequired[str | None]  # VictoriaMetrics' vmalert proxy


class QueryData(TypedDict):
    resultType: Literal["vector", "matrix", "scalar", "string"]
    result: Any  # checked by resultType below


class Sample(TypedDict):
    metric: Labels
    value: Point


class Series(TypedDict):
    metric: Labels
    values: list[Point]


class BuildInfo(TypedDict):
    version: NotRequired[str]
    application: NotRequired[str]  # Mimir, Cortex


class HeadStats(TypedDict):
    numSeries: NotRequired[int]


class TSDBStatus(TypedDict):
    headStats: NotRequired[HeadStats]  # Prometheus
    totalSeries: NotRequired[int]  # VictoriaMetrics


class Rule(TypedDict):
    name: str
    query: str
    type: NotRequired[str]
    health: NotRequired[str]
    lastError: NotRequired[str | None]
    labels: NotRequired[Labels | None]
    annotations: NotRequired[Labels | None]
    duration: NotRequired[float | None]


class RuleGroup(TypedDict):
    name: str
    file: NotRequired[str | None]
    rules: list[Rule]
    interval: NotRequired[float | None]
    evaluationTime: NotRequired[float | None]


class Rules(TypedDict):
    groups: list[RuleGroup]


class Alert(TypedDict):
    labels: Labels
    state: str  # pending or firing
    annotations: NotRequired[Labels | None]
    activeAt: NotRequired[str | None]
    value: NotRequired[str | None]


class Alerts(TypedDict):
    alerts: list[Alert]


class Target(TypedDict):
    labels: NotRequired[Labels | None]
    scrapePool: NotRequired[str | None]
    health: NotRequired[str | None]
    lastError: NotRequired[str | None]


class Targets(TypedDict):
    activeTargets: NotRequired[list[Target] | None]


SHAPES: dict[str, TypeAdapter[Any]] = {
    "envelope": TypeAdapter(Envelope),
    "query": TypeAdapter(QueryData),
    "vector": TypeAdapter(list[Sample]),
    "matrix": TypeAdapter(list[Series]),
    "scalar": TypeAdapter(Point),
    "string": TypeAdapter(tuple[Timestamp, str]),
    "names": TypeAdapter(list[str] | None),  # label names and label values (null: none)
    "buildinfo": TypeAdapter(BuildInfo),
    "tsdb": TypeAdapter(TSDBStatus),
    "stores": TypeAdapter(dict[str, Any]),  # Thanos Query: only whether it answers is read
    "rules": TypeAdapter(Rules),
    "targets": TypeAdapter(Targets),
    "alerts": TypeAdapter(Alerts),
}


def check(shape: str, value: Any, where: str = "data") -> Any:
    """`value` as `shape` holds it (fields not read dropped); WrongShape saying where it differs."""
    try:
        return SHAPES[shape].validate_python(value)
    except ValidationError as e:
        error = e.errors(include_url=False, include_context=False, include_input=False)[0]
        at = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        raise WrongShape(f"{where}{at}: {error['msg'].lower()}") from None


def parse(body: bytes) -> Any:
    """JSON of a body; ValueError when it is not JSON. Invalid UTF-8 is replaced (labels stay readable);
    nesting deeper than Python's JSON parser allows is a wrong shape."""
    try:
        return json.loads(body.decode("utf-8", errors="replace"))
    except RecursionError:
        raise WrongShape("nested too deeply to be a Prometheus API answer") from None
