"""The shipped compiled templates (obspack/templates_compiled/) are what the sources compile to, they are
used only while they match, and rendering from them gives the very bytes rendering from the sources gives."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jinja2
import pytest

from obspack import templating
from obspack.config import ObspackConfig
from obspack.runbooks import render_runbooks


def test_the_committed_compiled_templates_are_current(tmp_path: Path) -> None:
    """Fails after a template changes until `python -m obspack.templating` is run (and, where another jinja2
    release is installed than the one that compiled them, says so: they are then simply not used)."""
    recorded = json.loads((templating.COMPILED / templating.MANIFEST).read_text())
    assert recorded["templates"] == templating.digests(templating.templates_dir()), (
        "templates changed: run `python -m obspack.templating`"
    )
    if recorded["jinja2"] != jinja2.__version__:
        pytest.skip(f"compiled with jinja2 {recorded['jinja2']}, {jinja2.__version__} installed: not used here")
    templating.compile_into(tmp_path / "fresh")
    fresh = {p.name: p.read_bytes() for p in (tmp_path / "fresh").iterdir()}
    committed = {p.name: p.read_bytes() for p in templating.COMPILED.iterdir() if p.is_file()}
    assert committed == fresh
    assert templating.compiled_is_current()


def test_compiled_and_source_templates_render_the_same_bytes() -> None:
    templating.environment.cache_clear()
    try:
        compiled = render_runbooks(ObspackConfig())
        assert isinstance(templating.environment().loader, jinja2.ModuleLoader)
        templating.environment.cache_clear()
        original = templating.compiled_is_current
        templating.compiled_is_current = lambda compiled=templating.COMPILED: False  # type: ignore[assignment]
        try:
            sources = render_runbooks(ObspackConfig())
            assert isinstance(templating.environment().loader, jinja2.FileSystemLoader)
        finally:
            templating.compiled_is_current = original  # type: ignore[assignment]
    finally:
        templating.environment.cache_clear()
    assert compiled == sources


def test_a_changed_template_or_another_jinja2_falls_back_to_the_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "compiled"
    shutil.copytree(templating.COMPILED, copy)
    assert templating.compiled_is_current(copy)
    monkeypatch.setattr(jinja2, "__version__", "0.0.1")
    assert not templating.compiled_is_current(copy)
    monkeypatch.undo()
    sources = tmp_path / "templates"
    shutil.copytree(templating.templates_dir(), sources)
    monkeypatch.setattr(templating, "templates_dir", lambda: sources)
    assert templating.compiled_is_current(copy)
    (sources / "runbooks" / "_base.md.j2").write_text("changed\n")
    assert not templating.compiled_is_current(copy)
    (copy / templating.MANIFEST).write_text("not json")
    assert not templating.compiled_is_current(copy)
