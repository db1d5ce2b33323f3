"""values.yaml and values.schema.json, both written from the chart's one table of values
(obspack.pack.chart.values)."""

from __future__ import annotations

import textwrap
from typing import Any

import yaml

from obspack.pack.chart import Chart
from obspack.pack.chart.layout import generated_comment
from obspack.pack.chart.values import S, V
from obspack.render import yamlfmt


def _scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _wrap(text: str, width: int) -> list[str]:
    """Comment lines: broken at spaces only, never inside a value (`meta-llama/...` stays whole)."""
    return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)


def _emit(table: dict[str, V | S], indent: int) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    for key, item in table.items():
        if isinstance(item, S):
            if indent == 0:
                lines.append("")
            lines += [f"{pad}# {line}" for line in _wrap(item.doc, 110 - len(pad))]
            lines.append(f"{pad}{key}:")
            lines += _emit(item.children, indent + 1)
            continue
        comment = f"  # {item.doc}" if item.doc else ""
        if isinstance(item.default, (dict, list)) and item.default:
            if indent == 0:
                lines.append("")
            if item.doc:
                lines += [f"{pad}# {line}" for line in _wrap(item.doc, 110 - len(pad))]
            lines.append(f"{pad}{key}:")
            lines += [f"{pad}  {line}" for line in yamlfmt.dump(item.default).splitlines()]
        else:
            line = f"{pad}{key}: {_scalar(item.default)}"
            if item.doc and (indent == 0 or len(line + comment) > 110):
                lines += [""] if indent == 0 else []
                lines += [f"{pad}# {text}" for text in _wrap(item.doc, 110 - len(pad))]
                comment = ""
            lines.append(line + comment)
    return lines


def values_yaml(chart: Chart) -> str:
    head = [
        f"# {generated_comment()}",
        "# Defaults of the obspack chart: the alert and SLO settings are those of the config the chart was",
        "# rendered from. values.schema.json rejects unknown keys and wrong types.",
    ]
    return "\n".join(head + _emit(chart.values, 0)) + "\n"


def _schema(item: V | S) -> dict[str, Any]:
    if isinstance(item, V):
        return {**({"description": item.doc} if item.doc else {}), **item.schema}
    return {
        **({"description": item.doc} if item.doc else {}),
        "type": "object",
        "additionalProperties": False,
        "properties": {key: _schema(child) for key, child in item.children.items()},
    }


def values_schema(chart: Chart) -> dict[str, Any]:
    root = _schema(S("Values of the obspack chart.", chart.values))
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$comment": generated_comment(),
        **root,
    }
