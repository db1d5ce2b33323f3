"""Jinja2 templates shipped with obspack: from the wheel (obspack/templates) or a checkout (templates/)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2


def templates_dir() -> Path:
    packaged = Path(__file__).parent / "templates"
    if packaged.is_dir():
        return packaged
    return Path(__file__).parent.parent / "templates"


@cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render_template(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)
