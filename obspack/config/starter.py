"""The commented starter file (`obspack init`), made from the model so it never drifts from the defaults."""

from __future__ import annotations

from enum import Enum
from typing import Any

import yaml
from pydantic import BaseModel

from obspack.config.model import ObspackConfig


def _scalar(value: Any) -> str:
    if isinstance(value, Enum):
        value = value.value
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def _commented(model: BaseModel, indent: int) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    for name, info in type(model).model_fields.items():
        key = info.alias or name
        value = getattr(model, name)
        doc = info.description or (type(value).__doc__ or "").strip().splitlines()[0:1]
        doc = doc if isinstance(doc, str) else " ".join(doc)
        if isinstance(value, BaseModel):
            if indent == 0:
                lines.append("")
            if doc:
                lines.append(f"{pad}# {doc}")
            lines.append(f"{pad}{key}:")
            lines.extend(_commented(value, indent + 1))
        else:
            lines.append(f"{pad}{key}: {_scalar(value)}" + (f"  # {doc}" if doc else ""))
    return lines


def annotated_defaults() -> str:
    """Every setting with its default and a one-line explanation, as YAML that loads to the defaults."""
    head = [
        "# obspack config: every setting with its default. Delete what you do not change.",
        "# Render with: obspack render --config obspack.yaml --out generated",
    ]
    return "\n".join(head + _commented(ObspackConfig(), 0)) + "\n"
