"""The exporter's answer in the Prometheus text format (0.0.4) and OpenMetrics 1.0.0, written fast.

prometheus_client's writers check and escape every label name of every sample with regular expressions
(for UTF-8 metric names): with a few hundred derived series per scrape they took about a third of a
scrape's time. The families here have plain names (checked once per name, not once per sample), no
timestamps, exemplars or native histograms, so the lines are joined directly. The bytes are the very
bytes prometheus_client writes (tests/exporter/test_exposition.py compares them); a family this writer
does not handle (a timestamp, an exemplar, a name that needs escaping) sends the whole answer through
prometheus_client instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from prometheus_client.metrics_core import Metric
from prometheus_client.utils import floatToGoString

_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")  # a name neither format escapes (no colon, no UTF-8)
_TEXT_TYPES = {"counter": "counter", "gauge": "gauge", "unknown": "untyped", "info": "gauge"}


class NotPlain(Exception):
    """A family this writer does not handle: prometheus_client's writer must do the whole answer."""


def _plain(names: dict[str, bool], name: str) -> None:
    known = names.get(name)
    if known is None:
        known = names[name] = bool(_NAME.match(name))
    if not known:
        raise NotPlain(name)


def _value(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _samples(metric: Metric, names: dict[str, bool], pairs: dict[tuple[str, str], str]) -> Iterable[str]:
    """The sample lines of a family, as both formats write them (labels sorted by name).

    ``pairs`` holds each ``name="value"`` already written in this answer: the same few label pairs
    (target, model_name, engine, state) come back on every line, so each is checked and escaped once."""
    for s in metric.samples:
        if s.timestamp is not None or s.exemplar is not None or getattr(s, "native_histogram", None) is not None:
            raise NotPlain(s.name)
        _plain(names, s.name)
        labels = s.labels
        if labels:
            parts = []
            for key in sorted(labels):
                value = labels[key]
                pair = pairs.get((key, value))
                if pair is None:
                    _plain(names, key)
                    pair = pairs[key, value] = f'{key}="{_value(value)}"'
                parts.append(pair)
            yield f"{s.name}{{{','.join(parts)}}} {floatToGoString(s.value)}\n"
        else:
            yield f"{s.name} {floatToGoString(s.value)}\n"


def text(metrics: Sequence[Metric]) -> bytes:
    """The text format 0.0.4, as prometheus_client's `generate_latest` writes it. Raises NotPlain."""
    out: list[str] = []
    names: dict[str, bool] = {}
    pairs: dict[tuple[str, str], str] = {}
    for metric in metrics:
        kind = _TEXT_TYPES.get(metric.type)
        if kind is None:
            raise NotPlain(metric.type)
        name = metric.name + {"counter": "_total", "info": "_info"}.get(metric.type, "")
        _plain(names, name)
        doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {doc}\n# TYPE {name} {kind}\n")
        created = metric.name + "_created"
        if any(s.name == created for s in metric.samples):
            raise NotPlain(metric.name)  # text puts these in a family of their own: rare, left to the library
        out.extend(_samples(metric, names, pairs))
    return "".join(out).encode("utf-8")


def openmetrics(metrics: Sequence[Metric]) -> bytes:
    """OpenMetrics 1.0.0, as prometheus_client's OpenMetrics `generate_latest` writes it. Raises NotPlain."""
    out: list[str] = []
    names: dict[str, bool] = {}
    pairs: dict[tuple[str, str], str] = {}
    for metric in metrics:
        if metric.type not in _TEXT_TYPES:
            raise NotPlain(metric.type)
        _plain(names, metric.name)
        out.append(f"# HELP {metric.name} {_value(metric.documentation)}\n# TYPE {metric.name} {metric.type}\n")
        if metric.unit:
            out.append(f"# UNIT {metric.name} {metric.unit}\n")
        out.extend(_samples(metric, names, pairs))
    out.append("# EOF\n")
    return "".join(out).encode("utf-8")
