"""The two configs the rule tests render (the defaults and a changed one), rendered to a folder."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from obspack.config import ObspackConfig, load_config
from obspack.pack import Pack, build
from obspack.render.files import pack_files
from obspack.rules.model import RecordingRule

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CONFIGS = {"defaults": None, "custom": FIXTURES / "custom.yaml"}


@cache
def config_of(name: str) -> ObspackConfig:
    return load_config(CONFIGS[name])


@cache
def pack(name: str) -> Pack:
    return build(config_of(name))


@cache
def files(name: str) -> dict[str, str]:
    """The pack's files as `obspack render` writes them (shared: copy before changing one)."""
    return pack_files(pack(name))


def write_files(files: dict[str, str], folder: Path) -> Path:
    """Write a pack's files (path relative to the output folder -> text) into folder."""
    for rel, text in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return folder


def records_of(group_suffix: str, *records: str) -> list[dict[str, str]]:
    """The recording rules of the default pack's group whose name ends with `group_suffix` (only `records`,
    where given), as a promtool rule file lists them."""
    group = next(g for g in pack("defaults").recording_groups if g.name.endswith(group_suffix))
    return [
        {"record": r.record, "expr": r.expr}
        for r in group.rules
        if isinstance(r, RecordingRule) and (not records or r.record in records)
    ]


def render(name: str, folder: Path) -> Path:
    """Write the pack of a config (a key of CONFIGS) into folder, as `obspack render` lays it out."""
    return write_files(files(name), folder)
