"""The CUDA probe and the exporter on a real GPU: torch's own allocator, a real out-of-memory error.

tests/exporter/test_probe.py feeds the probe made-up stats; here tests/exporter/cuda_scenario.py runs the
probe inside a process that uses a GPU through PyTorch, and the exporter serves what the probe wrote. It needs
torch and a CUDA device, so it runs where they are (docs/exporter.md, "On a real GPU") and skips elsewhere:
the CI machines have no GPU, and obspack does not depend on torch.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from obspack.demo.fake_vllm import FakeVLLM
from obspack.demo.processes import Server, free_port, wait_ready

from .conftest import exporter_command

SCENARIO = Path(__file__).with_name("cuda_scenario.py")
ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20


@functools.cache
def _gpus() -> int:
    """CUDA devices torch sees, asked in a child process: this one must not initialise CUDA."""
    if importlib.util.find_spec("torch") is None:
        return 0
    try:
        asked = subprocess.run(
            [sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        return int(asked.stdout.strip() or 0) if asked.returncode == 0 else 0
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0


pytestmark = pytest.mark.skipif(
    "not _gpus()", reason="needs torch and a CUDA device (a GPU machine; CI has none)"
)


def _cuda_families(url: str) -> dict[str, float]:
    """The obspack_cuda_* samples of one exporter answer, by sample name."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        body = response.read().decode()
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(body)
        if family.name.startswith("obspack_cuda_")
        for sample in family.samples
        if not sample.name.endswith("_created")
    }


def _served(reading: dict[str, float]) -> dict[str, float]:
    """What the exporter must serve for one probe reading of the only device."""
    unused = reading["reserved_bytes"] - reading["allocated_bytes"]
    return {
        "obspack_cuda_allocator_reserved_bytes": reading["reserved_bytes"],
        "obspack_cuda_allocator_allocated_bytes": reading["allocated_bytes"],
        "obspack_cuda_allocator_inactive_split_bytes": reading["inactive_split_bytes"],
        "obspack_cuda_allocator_fragmentation_ratio": reading["inactive_split_bytes"] / unused,
        "obspack_cuda_alloc_retries_total": reading["num_alloc_retries"],
        "obspack_cuda_ooms_total": reading["num_ooms"],
    }


class _Scenario:
    """tests/exporter/cuda_scenario.py as a child process in a session of its own (its forked child too):
    read its steps, let it go on, stop the lot."""

    def __init__(self, probes: Path) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
        }
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)  # expandable segments report no split blocks at all
        self.process = subprocess.Popen(
            [sys.executable, str(SCENARIO), str(probes)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, start_new_session=True,
        )  # fmt: skip

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def step(self, name: str) -> dict:
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        assert line, f"the scenario ended before {name} (exit {self.process.poll()})"
        step = json.loads(line)
        print(json.dumps(step, sort_keys=True))  # the figures docs/exporter.md quotes
        assert step.pop("step") == name
        return step

    def go_on(self) -> None:
        self.process.stdin.write("scraped\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]


def test_the_probe_reports_torchs_allocator_and_the_exporter_serves_it(
    fake_vllm: FakeVLLM, tmp_path: Path
) -> None:
    probes = tmp_path / "probes"
    probes.mkdir()
    scenario = _Scenario(probes)
    exporter = None
    try:
        # vLLM's processes load the probe before CUDA exists, and fork workers that need it
        assert scenario.step("before_cuda") == {
            "cuda_initialised": False,
            "files": [],
            "forked_child_sum": 4.0,
        }

        fragmented = scenario.step("fragmented")
        reading = fragmented["allocator"]
        assert fragmented["probe"] == reading  # the probe's file says what torch says
        assert reading["allocated_bytes"] == 6 * 3 * MIB
        assert reading["inactive_split_bytes"] >= 6 * 3 * MIB  # the freed blocks sit between live ones
        # the freed 64 MiB segment is unused but whole: only part of the unused memory is split
        assert (
            reading["reserved_bytes"] - reading["allocated_bytes"]
            >= reading["inactive_split_bytes"] + 64 * MIB
        )

        address = f"127.0.0.1:{free_port()}"
        argv = [
            *exporter_command(),
            "--target",
            fake_vllm.url,
            "--listen",
            address,
            "--probe-dir",
            str(probes),
        ]
        exporter = Server.start("exporter", argv, tmp_path / "exporter.log", address)
        wait_ready(exporter, f"{exporter.url}/healthz")
        served = _cuda_families(exporter.url)
        assert served == _served(reading)
        assert 0 < served["obspack_cuda_allocator_fragmentation_ratio"] < 0.5
        scenario.go_on()

        oom = scenario.step("after_oom")
        reading = oom["allocator"]
        assert oom["raised"] == "OutOfMemoryError"
        assert (
            reading["num_ooms"] == 1 and reading["num_alloc_retries"] == 1
        )  # it flushed its cache, then gave up
        assert oom["probe"] == reading
        served = _cuda_families(exporter.url)
        assert served == _served(reading)
        # the allocator released the whole segment to retry: every unused byte left is split, a few MiB of
        # them, which is why VLLMCUDAAllocatorFragmentationHigh also needs min_split_gib
        assert served["obspack_cuda_allocator_fragmentation_ratio"] == 1.0
        assert served["obspack_cuda_allocator_inactive_split_bytes"] < 64 * MIB
        assert served["obspack_cuda_ooms_total"] == 1.0

        scenario.go_on()
        assert scenario.process.wait(timeout=60) == 0
        assert list(probes.iterdir()) == []  # the probe removed its file when the process exited
    finally:
        if exporter is not None:
            exporter.stop()
        scenario.stop()
