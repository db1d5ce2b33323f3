"""Tests of obspack.probe, the CUDA allocator probe that runs inside vLLM (fed fake stats: no torch here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from obspack import probe
from obspack.probe import Probe, essentials, write_atomic

GIB = 1 << 30
STATS = {
    "reserved_bytes.all.current": 10 * GIB,
    "allocated_bytes.all.current": 7 * GIB,
    "inactive_split_bytes.all.current": 1 * GIB,
    "num_alloc_retries": 4,
    "num_ooms": 0,
    "active_bytes.all.current": 7 * GIB,  # other keys are ignored
}


@pytest.fixture(autouse=True)
def no_leftover_probes() -> Iterator[None]:
    """Stop any probe thread a test started through probe.start()/register()."""
    yield
    for started in list(probe._probes.values()):
        started.stop(timeout=2)
    probe._probes.clear()


def test_essentials_keeps_five_figures_and_drops_unused_devices() -> None:
    unused = dict.fromkeys(STATS, 0)
    assert essentials({0: STATS, 1: unused, 2: {}}) == {
        "0": {
            "reserved_bytes": 10.0 * GIB,
            "allocated_bytes": 7.0 * GIB,
            "inactive_split_bytes": 1.0 * GIB,
            "num_alloc_retries": 4.0,
            "num_ooms": 0.0,
        }
    }


def test_write_once_writes_the_pid_file_atomically(tmp_path: Path) -> None:
    writer = Probe(tmp_path, interval_s=5, source=lambda: {0: STATS, 3: STATS})
    assert writer.write_once()
    document = json.loads((tmp_path / f"{os.getpid()}.json").read_text())
    assert document["schema"] == 1
    assert document["pid"] == os.getpid()
    assert document["interval_s"] == 5
    assert sorted(document["devices"]) == ["0", "3"]
    assert document["devices"]["3"]["inactive_split_bytes"] == 1.0 * GIB
    assert abs(document["time"] - time.time()) < 60
    assert os.listdir(tmp_path) == [f"{os.getpid()}.json"]  # no temporary file left behind


def test_no_devices_means_no_file(tmp_path: Path) -> None:
    writer = Probe(tmp_path, interval_s=5, source=lambda: {0: STATS})
    writer.write_once()
    writer.source = dict
    assert writer.write_once() is False
    assert os.listdir(tmp_path) == []


def test_failing_source_never_raises(tmp_path: Path) -> None:
    def broken() -> dict:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    assert Probe(tmp_path, interval_s=5, source=broken).write_once() is False


def test_write_atomic_replaces_whole_files(tmp_path: Path) -> None:
    target = tmp_path / "42.json"
    write_atomic(target, {"a": 1})
    write_atomic(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert sorted(os.listdir(tmp_path)) == ["42.json"]


def test_thread_refreshes_the_file_and_stop_removes_it(tmp_path: Path) -> None:
    calls = {"n": 0}

    def source() -> dict:
        calls["n"] += 1
        return {0: {**STATS, "num_alloc_retries": calls["n"]}}

    started = probe.start(tmp_path, interval_s=0.05, source=source)
    path = tmp_path / f"{os.getpid()}.json"
    deadline = time.monotonic() + 5
    while calls["n"] < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert calls["n"] >= 3
    assert json.loads(path.read_text())["devices"]["0"]["num_alloc_retries"] >= 2
    assert started.daemon
    started.stop(timeout=2)
    assert not started.is_alive()
    assert not path.exists()


def test_start_is_idempotent_per_process(tmp_path: Path) -> None:
    first = probe.start(tmp_path, interval_s=10, source=lambda: {0: STATS})
    second = probe.start(tmp_path, interval_s=10, source=lambda: {0: STATS})
    assert first is second


def test_register_does_nothing_without_the_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(probe.ENV_DIR, raising=False)
    probe.register()
    assert probe._probes == {}


def test_register_starts_with_the_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(probe.ENV_DIR, str(tmp_path))
    monkeypatch.setenv(probe.ENV_INTERVAL, "7")
    monkeypatch.setattr(probe, "torch_memory_stats", lambda: {0: STATS})
    probe.register()
    started = probe._probes[os.getpid()]
    assert started.is_alive()
    assert started.interval_s == 7.0
    assert started.directory == tmp_path
    deadline = time.monotonic() + 5
    while not (tmp_path / f"{os.getpid()}.json").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (tmp_path / f"{os.getpid()}.json").exists()


def test_register_survives_a_bad_interval(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(probe.ENV_DIR, str(tmp_path))
    monkeypatch.setenv(probe.ENV_INTERVAL, "soon")
    monkeypatch.setattr(probe, "torch_memory_stats", dict)
    probe.register()
    assert probe._probes[os.getpid()].interval_s == probe.DEFAULT_INTERVAL_S


def _fake_torch(initialized: bool, devices: int = 2) -> types.ModuleType:
    """A stand-in for torch that records every CUDA call the probe makes."""
    torch = types.ModuleType("torch")
    calls: list[str] = []

    def record(name: str, result: object) -> object:
        calls.append(name)
        return result

    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: record("is_available", True),
        is_initialized=lambda: record("is_initialized", initialized),
        device_count=lambda: record("device_count", devices),
        memory_stats=lambda device: record(f"memory_stats({device})", {**STATS, "num_ooms": device}),
        calls=calls,
    )
    return torch


def test_torch_source_reads_every_device_once_cuda_is_initialised(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = _fake_torch(initialized=True)
    monkeypatch.setitem(sys.modules, "torch", torch)
    stats = probe.torch_memory_stats()
    assert sorted(stats) == [0, 1]
    assert stats[1]["num_ooms"] == 1
    assert torch.cuda.calls == ["is_initialized", "device_count", "memory_stats(0)", "memory_stats(1)"]


def test_torch_source_never_initialises_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = _fake_torch(initialized=False)
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert probe.torch_memory_stats() == {}
    assert torch.cuda.calls == ["is_initialized"]  # not even is_available(), which would init the driver


def test_torch_source_without_torch_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert probe.torch_memory_stats() == {}
    assert "torch" not in sys.modules


def test_running_probe_never_imports_torch(tmp_path: Path) -> None:
    """In a process without torch the probe runs its default source, imports nothing, writes nothing."""
    code = (
        "import os, sys, time, obspack.probe; obspack.probe.register(); time.sleep(0.3); "
        "print('torch' in sys.modules, obspack.probe._probes[os.getpid()].is_alive(), os.listdir(sys.argv[1]))"
    )
    env = {**os.environ, probe.ENV_DIR: str(tmp_path), probe.ENV_INTERVAL: "0.05"}
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.stdout.strip() == "False True []", result.stderr


def test_vllm_plugin_entry_point_resolves_to_register() -> None:
    (plugin,) = [ep for ep in entry_points(group="vllm.general_plugins") if ep.name == "obspack_cuda_probe"]
    assert plugin.load() is probe.register
