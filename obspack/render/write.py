"""Put the pack on disk safely, or compare it with what is there (`--check`).

- Atomic: every changed file is first staged next to its target; only when all are staged are they
  renamed into place. A failure while staging removes the staged files and leaves the output as it was.
- Owned files only: obspack keeps a manifest of what it wrote. It removes files it wrote earlier and no
  longer renders, and refuses to overwrite a file it did not write.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from obspack.errors import RenderError
from obspack.render.files import MARKER

MANIFEST = ".obspack-manifest"
_STAGED = ".obspack-tmp"


@dataclass(frozen=True)
class Diff:
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.missing or self.stale or self.extra)


def manifest_text(paths: list[str]) -> str:
    lines = "\n".join(sorted(paths))
    return f"# {MARKER}: the files it wrote here. It removes those it no longer renders.\n{lines}\n"


def with_manifest(files: dict[str, str]) -> dict[str, str]:
    return {**files, MANIFEST: manifest_text(list(files))}


def _previous(out: Path) -> set[str]:
    try:
        text = (out / MANIFEST).read_text(encoding="utf-8")
    except OSError:
        return set()
    return {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}


def _ours(path: Path, owned: set[str], rel: str) -> bool:
    if rel in owned or rel == MANIFEST:
        return True
    try:
        with path.open("r", encoding="utf-8", errors="replace") as f:
            return MARKER in f.read(400)
    except OSError:
        return False


def diff(out: Path, files: dict[str, str]) -> Diff:
    """What differs between the rendered files (manifest included) and the output folder."""
    files = with_manifest(files)
    result = Diff()
    for rel, text in files.items():
        target = out / rel
        try:
            current = target.read_bytes()
        except FileNotFoundError:
            result.missing.append(rel)
            continue
        except OSError as e:
            raise RenderError(f"cannot read {target}: {e.strerror}") from None
        (result.unchanged if current == text.encode("utf-8") else result.stale).append(rel)
    result.extra.extend(sorted(p for p in _previous(out) - set(files) if (out / p).exists()))
    return result


def write(out: Path, files: dict[str, str], *, write_bytes: Callable[[Path, bytes], object] = Path.write_bytes) -> Diff:
    """Write the pack into `out`; returns what changed. Raises RenderError and changes nothing on failure."""
    change = diff(out, files)
    files = with_manifest(files)
    owned = _previous(out)
    foreign = [rel for rel in change.stale if not _ours(out / rel, owned, rel)]
    if foreign:
        raise RenderError(
            f"refusing to overwrite files obspack did not write: {', '.join(foreign)} "
            "(move them away or choose another --out)"
        )
    staged: list[tuple[Path, Path]] = []
    try:
        for rel in sorted(change.missing + change.stale):
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}{_STAGED}")
            staged.append((tmp, target))
            write_bytes(tmp, files[rel].encode("utf-8"))
    except Exception as e:  # any failure while staging: undo, keep the previous output
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise RenderError(f"writing {out} failed, previous output left as it was: {reason}") from None
    # The manifest goes last, so an interruption never forgets a file that is already in place.
    staged.sort(key=lambda pair: pair[1].name == MANIFEST)
    for tmp, target in staged:
        os.replace(tmp, target)
    for rel in change.extra:
        (out / rel).unlink(missing_ok=True)
        _prune_empty(out, (out / rel).parent)
    return change


def _prune_empty(out: Path, folder: Path) -> None:
    root = out.resolve()
    while folder.resolve() != root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
