"""The exporter's answer in the Prometheus text format (0.0.4) and OpenMetrics 1.0.0, written fast.

prometheus_client's writers check and escape every label name of every sample with regular expressions
(for UTF-8 metric names): with a few hundred derived series per scrape they took about a third of a
scrape's time. The families here have plain names (each series is checked once and kept, see `_series`), no
timestamps, exemplars or native histograms, so the lines are joined directly. The bytes are the very
bytes prometheus_client writes (tests/exporter/test_exposition.py compares them); a family this writer
does not handle (a timestamp, an exemplar, a name that needs escaping) sends the whole answer through
prometheus_client instead.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

from prometheus_client.metrics_core import Metric
from prometheus_client.utils import floatToGoString

_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")  # a name neither format escapes (no colon, no UTF-8)
_TEXT_TYPES = {"counter": "counter", "gauge": "gauge", "unknown": "untyped", "info": "gauge"}


class NotPlain(Exception):
    """A family this writer does not handle: prometheus_client's writer must do the whole answer."""


def _plain(name: str) -> None:
    if not _NAME.match(name):
        raise NotPlain(name)


def _value(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _samples(metric: Metric) -> Iterable[str]:
    """The sample lines of a family, as both formats write them (labels sorted by name)."""
    for s in metric.samples:
        if s.timestamp is not None or s.exemplar is not None or getattr(s, "native_histogram", None) is not None:
            raise NotPlain(s.name)
        value = s.value
        if type(value) is float:  # what floatToGoString writes for a finite float under a million: its repr
            number = repr(value)
            if number.find(".") > 6 or number[-1] in "fn":  # a million or more, inf, nan: Go's spelling
                number = floatToGoString(value)
        else:
            number = floatToGoString(value)
        yield f"{_series(s.name, tuple(s.labels.items()))} {number}\n"


# The exporter answers with the same few hundred series every scrape: each series' name and labels are
# checked and written once, and kept (a bounded number of them, least recently used first out).
SERIES_KEPT = 4096


@functools.lru_cache(maxsize=SERIES_KEPT)
def _series(name: str, labels: tuple[tuple[str, str], ...]) -> str:
    """``name{label="value",...}`` with the labels sorted by name, or the name alone. Raises NotPlain."""
    _plain(name)
    if not labels:
        return name
    for key, _ in labels:
        _plain(key)
    return name + "{" + ",".join(f'{key}="{_value(value)}"' for key, value in sorted(labels)) + "}"


def text(metrics: Sequence[Metric]) -> bytes:
    """The text format 0.0.4, as prometheus_client's `generate_latest` writes it. Raises NotPlain."""
    out: list[str] = []
    for metric in metrics:
        kind = _TEXT_TYPES.get(metric.type)
        if kind is None:
            raise NotPlain(metric.type)
        name = metric.name + {"counter": "_total", "info": "_info"}.get(metric.type, "")
        _plain(name)
        doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {doc}\n# TYPE {name} {kind}\n")
        created = metric.name + "_created"
        if any(s.name == created for s in metric.samples):
            raise NotPlain(metric.name)  # text puts these in a family of their own: rare, left to the library
        out.extend(_samples(metric))
    return "".join(out).encode("utf-8")


def openmetrics(metrics: Sequence[Metric]) -> bytes:
    """OpenMetrics 1.0.0, as prometheus_client's OpenMetrics `generate_latest` writes it. Raises NotPlain."""
    out: list[str] = []
    for metric in metrics:
        if metric.type not in _TEXT_TYPES:
            raise NotPlain(metric.type)
        _plain(metric.name)
        out.append(f"# HELP {metric.name} {_value(metric.documentation)}\n# TYPE {metric.name} {metric.type}\n")
        if metric.unit:
            out.append(f"# UNIT {metric.name} {metric.unit}\n")
        out.extend(_samples(metric))
    out.append("# EOF\n")
    return "".join(out).encode("utf-8")
