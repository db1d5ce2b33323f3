"""The pipeline's layers (docs/architecture.md): no module imports a later stage, and the writers and the
doctor never read the config. Every import counts, those inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "obspack"

STAGES = {
    0: {"__init__", "errors", "durations", "memo", "numbers", "promql", "metricsql", "catalogue", "templating", "yamlsource",
        "attrs_bytecode", "exporter", "probe", "templates_compiled"},
    1: {"config", "conventions", "slos"},
    2: {"rules", "dashboards", "runbooks", "pack"},
    3: {"render", "doctor", "rightsize"},
    4: {"cli", "__main__", "demo"},
}  # fmt: skip
STAGE = {name: stage for stage, names in STAGES.items() for name in names}
NEVER_CONFIG = {"render", "doctor"}  # they take the Pack


def _top(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _imported(path: Path) -> list[tuple[int, str]]:
    """(line, top-level obspack module) of every import in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] != "obspack":
                continue
            if len(parts) > 1:
                found.append((node.lineno, parts[1]))
            else:  # from obspack import config, slos
                found += [(node.lineno, alias.name) for alias in node.names if alias.name in STAGE]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[1]) for a in node.names if a.name.startswith("obspack.")]
    return found


def test_every_module_has_a_stage() -> None:
    tops = {_top(p) for p in PACKAGE.rglob("*.py")} | {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    tops -= {"__pycache__"}
    assert tops <= set(STAGE), f"add these to a stage in tests/test_layers.py and docs/architecture.md: {sorted(tops - set(STAGE))}"


def test_no_module_imports_a_later_stage_and_writers_never_read_the_config() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mine = _top(path)
        for line, other in _imported(path):
            where = f"{path.relative_to(PACKAGE.parent)}:{line}"
            if STAGE.get(other, 0) > STAGE[mine]:
                wrong.append(f"{where}: {mine} (stage {STAGE[mine]}) imports {other} (stage {STAGE[other]})")
            if mine in NEVER_CONFIG and other == "config":
                wrong.append(f"{where}: {mine} reads the config; it must take the Pack")
    assert wrong == []


def test_the_check_sees_a_violation(tmp_path: Path) -> None:
    """The import reader finds both spellings and imports inside functions."""
    sample = tmp_path / "sample.py"
    sample.write_text("from obspack import config, slos\nimport obspack.cli\n\ndef f():\n    from obspack.render.files import x\n")
    assert _imported(sample) == [(1, "config"), (1, "slos"), (2, "cli"), (5, "render")]
