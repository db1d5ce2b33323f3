"""CUDA allocator probe: a vLLM general plugin that publishes ``torch.cuda.memory_stats()`` essentials.

vLLM loads every ``vllm.general_plugins`` entry point in each of its processes and calls it;
obspack's is ``register`` below. It does nothing unless ``OBSPACK_PROBE_DIR`` is set. Then a daemon
thread writes, every ``OBSPACK_PROBE_INTERVAL`` seconds (default 5), one JSON file per process,
``$OBSPACK_PROBE_DIR/<pid>.json``, through a temporary file and ``os.replace`` so a reader never
sees half a file. ``obspack exporter --probe-dir`` reads the directory.

The probe never initialises CUDA: a process where torch has not initialised CUDA yet (vLLM's API
server, the engine core before it starts workers) reports no devices and writes no file. torch is
never imported by the probe itself (it is used once vLLM has imported it), and tests pass their
own stats source.

File format (``schema`` 1)::

    {"schema": 1, "pid": 4242, "pidns": "pid:[4026531836]", "interval_s": 5.0, "time": 1.7e9,
     "devices": {"0": {"reserved_bytes": 0, "allocated_bytes": 0, "inactive_split_bytes": 0,
                       "num_alloc_retries": 0, "num_ooms": 0}}}
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

ENV_DIR = "OBSPACK_PROBE_DIR"
ENV_INTERVAL = "OBSPACK_PROBE_INTERVAL"
DEFAULT_INTERVAL_S = 5.0
SCHEMA = 1

# file field -> torch.cuda.memory_stats() key
STAT_KEYS: dict[str, str] = {
    "reserved_bytes": "reserved_bytes.all.current",
    "allocated_bytes": "allocated_bytes.all.current",
    "inactive_split_bytes": "inactive_split_bytes.all.current",
    "num_alloc_retries": "num_alloc_retries",
    "num_ooms": "num_ooms",
}

StatsSource = Callable[[], Mapping[int, Mapping[str, float]]]
"""Returns {device index: memory_stats() dict} for the devices this process uses."""

log = logging.getLogger(__name__)
_lock = threading.Lock()
_probes: dict[int, Probe] = {}  # by pid: a forked child inherits the dict but not the thread


def register() -> None:
    """vLLM plugin hook: start the probe thread in this process when ``OBSPACK_PROBE_DIR`` is set."""
    directory = os.environ.get(ENV_DIR)
    if not directory:
        return
    try:
        interval = float(os.environ.get(ENV_INTERVAL, DEFAULT_INTERVAL_S))
    except ValueError:
        interval = DEFAULT_INTERVAL_S
    try:
        start(Path(directory), interval_s=interval)
    except Exception:  # a probe must never stop vLLM from starting
        log.warning("obspack CUDA probe not started", exc_info=True)


def start(
    directory: Path, *, interval_s: float = DEFAULT_INTERVAL_S, source: StatsSource | None = None
) -> Probe:
    """Start (once per process) the thread that writes this process's stats file; return its Probe."""
    with _lock:
        probe = _probes.get(os.getpid())
        if probe is None or not probe.is_alive():
            probe = Probe(directory, interval_s=max(interval_s, 0.05), source=source or torch_memory_stats)
            probe.start()
            _probes[os.getpid()] = probe
        return probe


def essentials(stats: Mapping[int, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Keep the five allocator figures per device; drop devices this process never allocated on."""
    devices: dict[str, dict[str, float]] = {}
    for device, device_stats in stats.items():
        values = {field: float(device_stats.get(key, 0) or 0) for field, key in STAT_KEYS.items()}
        if any(values.values()):
            devices[str(device)] = values
    return devices


def snapshot(pid: int, devices: Mapping[str, Mapping[str, float]], interval_s: float, now: float) -> dict:
    """The JSON document one probe file holds."""
    return {
        "schema": SCHEMA,
        "pid": pid,
        "pidns": pid_namespace(),
        "interval_s": interval_s,
        "time": now,
        "devices": {device: dict(values) for device, values in devices.items()},
    }


def write_atomic(path: Path, document: Mapping) -> None:
    """Write ``document`` as JSON to ``path`` via a hidden temporary file and ``os.replace``."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(document, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def pid_namespace() -> str | None:
    """This process's PID namespace id (``pid:[...]``), or None where /proc does not tell."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def torch_memory_stats() -> dict[int, Mapping[str, float]]:
    """memory_stats() of every visible device, but only once torch has initialised CUDA here.

    Nothing here may initialise CUDA: vLLM forks workers from processes that must not have touched
    it (even ``torch.cuda.is_available()`` would). ``is_initialized()`` only reads a flag, and a
    process that has not imported torch cannot have initialised CUDA through it.
    """
    if "torch" not in sys.modules:
        return {}
    import torch  # already imported by vLLM; obspack itself does not depend on torch

    if not torch.cuda.is_initialized():
        return {}
    return {device: torch.cuda.memory_stats(device) for device in range(torch.cuda.device_count())}


class Probe(threading.Thread):
    """The daemon thread that refreshes ``<directory>/<pid>.json`` every ``interval_s`` seconds."""

    def __init__(self, directory: Path, *, interval_s: float, source: StatsSource) -> None:
        super().__init__(name="obspack-cuda-probe", daemon=True)
        self.directory = directory
        self.interval_s = interval_s
        self.source = source
        self.pid = os.getpid()
        self.path = directory / f"{self.pid}.json"
        self._stop_event = threading.Event()
        atexit.register(self.stop, 1.0)

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.write_once()
            self._stop_event.wait(self.interval_s)

    def write_once(self) -> bool:
        """Write the current stats; return whether a file was written. Never raises."""
        try:
            devices = essentials(self.source())
            if not devices:
                self.remove_file()
                return False
            self.directory.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, snapshot(self.pid, devices, self.interval_s, time.time()))
            return True
        except Exception:
            log.debug("obspack CUDA probe could not write %s", self.path, exc_info=True)
            return False

    def stop(self, timeout: float | None = None) -> None:
        """Stop the thread and remove this process's file (tests; interpreter exit does it too)."""
        self._stop_event.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)
        self.remove_file()

    def remove_file(self) -> None:
        if os.getpid() != self.pid:  # a forked child must not delete its parent's file
            return
        try:
            self.path.unlink()
        except OSError:
            pass
