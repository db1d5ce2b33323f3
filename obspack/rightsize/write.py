"""`--patches DIR`: one strategic-merge patch file per owner with safe changes, and nothing else.

Each file is written beside its final name and renamed onto it, never through a link: a link at a patch
file's name (a cloned repository can carry one) is refused, with its name. Comments carry the kubectl
command, the vLLM arguments and the confidence, with any control character shown escaped, so no label value
can add a line the YAML would read.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from obspack.rightsize.model import Workload
from obspack.rightsize.patches import owner_patches
from obspack.rightsize.settings import OptionError


def _comment(text: str) -> str:
    shown = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return f"# {shown}\n"


def _write(path: Path, text: str) -> None:
    if path.is_symlink():
        raise OptionError(f"--patches: {path} is a symbolic link; obspack does not write through links (remove it)")
    if path.exists() and not path.is_file():
        raise OptionError(f"--patches: {path} exists and is not a file")
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(temporary, flags, 0o644)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)  # replaces a file; a link that appeared meanwhile is replaced, not followed
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_patches(folder: Path, found: tuple[Workload, ...], include_low: bool = False) -> list[Path]:
    """Write `<cluster>_<namespace>_<kind>_<name>.yaml` for each owner that takes a patch; the paths."""
    written = []
    try:
        if folder.is_symlink() and not folder.is_dir():
            raise OptionError(f"--patches {folder}: a link to nothing")
        folder.mkdir(parents=True, exist_ok=True)
        for owner in owner_patches(found, include_low):
            if owner.patch is None:
                continue
            header = _comment(owner.command) if owner.command else ""
            for container, flags in owner.args:
                header += _comment(f"vLLM arguments to set on {container}: {' '.join(flags)}")
            header += _comment("confidence: " + ", ".join(owner.confidence))
            path = folder / owner.file_name
            _write(path, header + yaml.safe_dump(owner.patch, sort_keys=True))
            written.append(path)
    except OSError as e:
        raise OptionError(f"--patches {folder}: cannot write ({e.strerror or e})") from None
    return written
