"""`--patches DIR`: one strategic-merge patch file per owner with changes, and nothing else."""

from __future__ import annotations

from pathlib import Path

import yaml

from obspack.rightsize.model import Workload
from obspack.rightsize.patches import owner_patches
from obspack.rightsize.settings import OptionError


def write_patches(folder: Path, found: tuple[Workload, ...]) -> list[Path]:
    """Write `<cluster>_<namespace>_<kind>_<name>.yaml` for each owner that takes a patch; the paths."""
    written = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for owner in owner_patches(found):
            if owner.patch is None:
                continue
            path = folder / owner.file_name
            header = f"# {owner.command}\n" if owner.command else ""
            for container, flags in owner.args:
                header += f"# vLLM arguments to set on {container}: {' '.join(flags)}\n"
            path.write_text(header + yaml.safe_dump(owner.patch, sort_keys=True), encoding="utf-8")
            written.append(path)
    except OSError as e:
        raise OptionError(f"--patches {folder}: cannot write ({e.strerror})") from None
    return written
