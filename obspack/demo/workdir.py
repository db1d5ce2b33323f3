"""The demo's working folder, under the rules `obspack render` keeps: never overwrite a file the demo did not
write, never follow a link.

A folder is the demo's when it is new, empty, or holds the demo's marker file (`.obspack-demo`, written when
the demo first claims it); any other folder is refused before anything is written, so that `obspack demo
--workdir .` in a monitoring repository cannot replace the team's obspack.yaml. Inside its folder the demo
refuses links anywhere (a cloned folder can carry one at the name of a config file or a data folder, and
Prometheus, Alertmanager and the logs would write through it), and it writes its own files without
following a link, each with the marker in its first line so that a file put there by hand is never replaced.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from obspack.conventions import MARKER
from obspack.demo.processes import StackError

CLAIM = ".obspack-demo"
CLAIM_TEXT = f"# {MARKER} demo: this folder holds the demo's configs, data and logs; it may be deleted.\n"
_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_SHOWN = 5  # entries named in a refusal


def claim(folder: Path) -> None:
    """Make `folder` the demo's, or raise StackError saying why it cannot be: it holds files the demo did
    not write, a link, or something that is not a folder. `folder` itself may be a link the user chose."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        entries = sorted(os.listdir(folder))
    except OSError as e:
        raise StackError(f"cannot use {folder} as the demo's folder: {e.strerror or e}") from None
    if entries and CLAIM not in entries:
        shown = ", ".join(entries[:_SHOWN]) + (f" and {len(entries) - _SHOWN} more" if len(entries) > _SHOWN else "")
        raise StackError(
            f"{folder} holds files the demo did not write ({shown}); the demo writes only into a new or empty "
            "folder, or one an earlier demo wrote: choose another --workdir (or leave it out for a temporary one)"
        )
    links = [str(p.relative_to(folder)) for p in _links(folder)]
    if links:
        raise StackError(
            f"{folder} holds links ({', '.join(links[:_SHOWN])}): the demo never writes through a link; "
            "remove them or choose another --workdir"
        )
    if CLAIM in entries:
        if not stat.S_ISREG(os.lstat(folder / CLAIM).st_mode):
            raise StackError(f"{folder / CLAIM} is not a file the demo wrote: choose another --workdir")
    else:
        write_own(folder / CLAIM, CLAIM_TEXT)


def _links(folder: Path) -> list[Path]:
    """Every link below `folder` (not followed)."""
    found = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            path = Path(root, name)
            if path.is_symlink():
                found.append(path)
    return sorted(found)


def write_own(path: Path, text: str) -> None:
    """Write one of the demo's files: never through a link, and never over a file whose first line does not
    carry obspack's marker (a file put there by hand)."""
    fd = -1
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StackError(f"{path} is not a regular file: the demo does not write there")
        head = os.read(fd, 400)
        if head and MARKER.encode() not in head.split(b"\n", 1)[0]:
            raise StackError(f"refusing to overwrite {path}: the demo did not write it (move it away)")
        os.ftruncate(fd, 0)
        data = text.encode("utf-8")
        os.lseek(fd, 0, os.SEEK_SET)
        while data:
            data = data[os.write(fd, data) :]
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise StackError(f"{path} is a link: the demo never writes through a link") from None
        raise StackError(f"cannot write {path}: {e.strerror or e}") from None
    finally:
        if fd >= 0:
            os.close(fd)
