"""Read the CUDA allocator probe's files (``<pid>.json``, written by ``obspack.probe``).

A file is used only while it is fresh: its mtime must be less than ``max_age_s`` old. When the
probe ran in this process's PID namespace (the file records the namespace id, and an exporter
sharing the namespace sees the same one) the pid must also still be alive. A sidecar without
``shareProcessNamespace`` cannot see vLLM's pids, so there staleness alone retires a dead process's
file. Anything unreadable or malformed is skipped; this module never raises for file contents, and a
bad file costs only itself: a file with far more brackets than any probe writes (100,000 nested `[`) is
refused before it is parsed, and whatever else goes wrong with one file skips that file.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from obspack.probe import STAT_KEYS

DEFAULT_MAX_AGE_S = 60.0
MAX_FILES = 512
MAX_FILE_BYTES = 256 * 1024
# The probe writes two objects plus one per device (a process sees a few GPUs): far more brackets is not
# its file, and nesting can never be deeper than the brackets there are.
MAX_BRACKETS = 256
_NAME = re.compile(r"[0-9]{1,10}\.json\Z")


@dataclass(frozen=True, slots=True)
class DeviceStats:
    """One device's allocator figures in one process."""

    pid: str
    device: str
    reserved_bytes: float
    allocated_bytes: float
    inactive_split_bytes: float
    num_alloc_retries: float
    num_ooms: float


def read_probe_dir(
    directory: Path,
    *,
    now: float,
    own_pidns: str | None,
    max_age_s: float = DEFAULT_MAX_AGE_S,
    pid_alive: Callable[[int], bool] | None = None,
) -> list[DeviceStats]:
    """Every device of every fresh, live probe file in ``directory`` (wall-clock ``now``), sorted by pid.

    ``own_pidns`` is the reader's PID namespace (``obspack.probe.pid_namespace()``; None: unknown,
    so never check liveness); ``pid_alive`` defaults to a signal-0 check. A missing directory gives
    an empty list.
    """
    alive = pid_alive or is_pid_alive
    try:
        names = sorted(entry for entry in os.listdir(directory) if _NAME.match(entry))
    except OSError:
        return []
    found: list[DeviceStats] = []
    for name in names[:MAX_FILES]:
        try:
            found.extend(_read_one(directory / name, now, max_age_s, own_pidns, alive))
        except Exception:  # noqa: BLE001 (one bad file costs only itself)
            continue
    return sorted(found, key=lambda d: (int(d.pid), d.device))


def _read_one(
    path: Path, now: float, max_age_s: float, own_pidns: str | None, alive: Callable[[int], bool]
) -> list[DeviceStats]:
    """The devices of one probe file: none when it is stale, malformed, another pid's or a dead one's."""
    document = _load_fresh(path, now, max_age_s)
    pid_text = path.name[: -len(".json")]
    if document is None or str(document.get("pid")) != pid_text:
        return []
    pid = int(pid_text)
    if own_pidns is not None and document.get("pidns") == own_pidns and not alive(pid):
        return []
    return _devices(str(pid), document.get("devices"))


def is_pid_alive(pid: int) -> bool:
    """Whether ``pid`` exists in this PID namespace (a process we may not signal still counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _load_fresh(path: Path, now: float, max_age_s: float) -> dict | None:
    """The JSON object in ``path`` if it is a small, fresh regular file; else None."""
    try:
        info = os.stat(path, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        if now - info.st_mtime > max_age_s:
            return None
        data = path.read_bytes()
        if brackets(data) > MAX_BRACKETS:
            return None
        document = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return None
    return document if isinstance(document, dict) else None


def brackets(data: bytes) -> int:
    """How many JSON arrays and objects ``data`` could open (brackets, in strings or not): a bound on how
    deep it can nest, counted in C before parsing, since deep nesting makes the parser recurse."""
    return data.count(b"[") + data.count(b"{")


def _devices(pid: str, devices: object) -> list[DeviceStats]:
    """The well-formed device entries of one file; entries with a missing or bad figure are skipped."""
    if not isinstance(devices, dict):
        return []
    out = []
    for device, values in devices.items():
        if not isinstance(values, dict):
            continue
        figures = [values.get(field) for field in STAT_KEYS]
        if not all(_is_count(v) for v in figures):
            continue
        out.append(DeviceStats(pid, str(device), *(float(v) for v in figures)))
    return out


def _is_count(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
