"""Jinja2 templates shipped with obspack: from the wheel (obspack/templates) or a checkout (templates/).

Turning a template into Python (lexing, parsing, code generation) is most of what rendering the runbooks
costs, and a process pays it for every template it loads: about a quarter of a cold `obspack render`. The
templates are therefore also shipped compiled, as Python modules in `obspack/templates_compiled/` (one per
template, as jinja2's own `compile_templates` writes them, which pip turns into bytecode at install), with a
manifest of the jinja2 version and each template's digest. They are used only when both still match: a
changed template, or another jinja2 release, falls back to compiling from the sources, so the output never
depends on them, only the speed. `python -m obspack.templating` writes them again; tests/test_templating.py
fails while they are stale.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

COMPILED = Path(__file__).parent / "templates_compiled"
MANIFEST = "manifest.json"


def templates_dir() -> Path:
    packaged = Path(__file__).parent / "templates"
    if packaged.is_dir():
        return packaged
    return Path(__file__).parent.parent / "templates"


_OPTIONS: dict[str, Any] = {
    "undefined": jinja2.StrictUndefined,
    "keep_trailing_newline": True,
    "trim_blocks": True,
    "lstrip_blocks": True,
    "autoescape": False,
}


def source_environment() -> jinja2.Environment:
    """The environment that compiles the templates from their sources."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), **_OPTIONS)


def digests(folder: Path) -> dict[str, str]:
    """Each template under `folder` (its name as jinja2 knows it) and the SHA-256 of its source."""
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*.j2"))
    }


def manifest(folder: Path) -> dict[str, Any]:
    return {"jinja2": jinja2.__version__, "templates": digests(folder)}


def compiled_is_current(compiled: Path = COMPILED) -> bool:
    """Whether the shipped compiled templates were made by this jinja2 from these very sources."""
    try:
        recorded = json.loads((compiled / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(recorded == manifest(templates_dir()))


@cache
def environment() -> jinja2.Environment:
    if compiled_is_current():
        return jinja2.Environment(loader=jinja2.ModuleLoader(str(COMPILED)), **_OPTIONS)
    return source_environment()


def render_template(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)


def compile_into(target: Path) -> None:
    """Write the compiled templates and their manifest into `target` (replaced)."""
    if target.exists():
        shutil.rmtree(target)
    source_environment().compile_templates(str(target), zip=None, ignore_errors=False)
    (target / MANIFEST).write_text(json.dumps(manifest(templates_dir()), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    compile_into(COMPILED)
    print(f"compiled {len(digests(templates_dir()))} templates into {COMPILED}")
