"""A process that uses a real GPU the way the probe meets it in vLLM, for tests/exporter/test_probe_cuda.py.

Run as ``python cuda_scenario.py DIR``: it sets ``OBSPACK_PROBE_DIR=DIR``, imports torch and starts the probe
through its vLLM plugin hook before CUDA is initialised, as in vLLM's processes. Then, one JSON line per step
on stdout:

1. ``before_cuda``: whether CUDA got initialised while the probe ran, the files it wrote meanwhile, and
   whether a child forked now can still use the GPU (vLLM forks its workers; a parent that had touched CUDA
   would make the child fail with "Cannot re-initialize CUDA in forked subprocess").
2. ``fragmented``: after 3 MiB tensors are allocated and every other one freed, and a 64 MiB tensor is
   allocated and freed, the allocator's own figures (``torch.cuda.memory_stats``) next to what the probe
   file says.
3. ``after_oom``: after a real CUDA out-of-memory error, the same. On its way to the error the allocator
   releases every cached segment no tensor uses (as ``torch.cuda.empty_cache()`` does), so only the split
   blocks are left unused.

Before step 3 and before it exits, it waits for a line on stdin, so that the test can scrape an exporter
reading the probe's file in each state. It exits normally (the probe removes its file at exit).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

INTERVAL_S = 0.05
MIB = 1 << 20


def _child() -> float:
    import torch

    return float(torch.ones(4, device="cuda").sum().item())


def _wait_file(path: Path, until: object, timeout: float = 10.0) -> dict | None:
    """The probe file's first device once `until(device)` holds (the probe writes every INTERVAL_S)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            device = json.loads(path.read_text())["devices"]["0"]
        except (OSError, ValueError, KeyError):
            device = None
        if device is not None and until(device):  # type: ignore[operator]
            return device
        time.sleep(INTERVAL_S)
    return None


def _allocator(torch: object) -> dict:
    from obspack.probe import STAT_KEYS

    stats = torch.cuda.memory_stats(0)  # type: ignore[attr-defined]
    return {field: stats[key] for field, key in STAT_KEYS.items()}


def _say(step: str, **fields: object) -> None:
    print(json.dumps({"step": step, **fields}, sort_keys=True), flush=True)


def main(directory: Path) -> None:
    os.environ["OBSPACK_PROBE_DIR"] = str(directory)
    os.environ["OBSPACK_PROBE_INTERVAL"] = str(INTERVAL_S)
    import torch

    from obspack import probe

    probe.register()  # what vLLM's plugin loader calls in each of its processes
    time.sleep(20 * INTERVAL_S)
    initialised = torch.cuda.is_initialized()
    files = sorted(p.name for p in directory.iterdir())
    with multiprocessing.get_context("fork").Pool(1) as pool:
        try:
            child: object = pool.apply_async(_child).get(timeout=60)
        except Exception as e:  # noqa: BLE001 (reported, and the test fails on it)
            child = f"{type(e).__name__}: {e}"
    _say("before_cuda", cuda_initialised=initialised, files=files, forked_child_sum=child)

    path = directory / f"{os.getpid()}.json"
    tensors = [torch.empty(3 * MIB, dtype=torch.uint8, device="cuda") for _ in range(12)]
    del tensors[::2]  # every other 3 MiB block inside the allocator's 20 MiB segments is free again
    large = torch.empty(64 * MIB, dtype=torch.uint8, device="cuda")  # a segment of its own...
    del large  # ...cached whole: unused, but not split
    torch.cuda.synchronize()
    expected = _allocator(torch)
    _say("fragmented", allocator=expected, probe=_wait_file(path, lambda d: d == expected), file=path.name)
    sys.stdin.readline()  # the test has scraped the exporter

    try:
        torch.empty(1 << 50, dtype=torch.uint8, device="cuda")  # a pebibyte: no GPU has it
        raised = ""
    except torch.cuda.OutOfMemoryError as e:
        raised = type(e).__name__
    expected = _allocator(torch)
    _say("after_oom", raised=raised, allocator=expected, probe=_wait_file(path, lambda d: d == expected))

    sys.stdin.readline()  # the test has scraped the exporter
    del tensors


if __name__ == "__main__":
    main(Path(sys.argv[1]))
