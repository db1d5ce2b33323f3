"""Tests of obspack.exporter.probe_files: which probe files count, and what they give."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from obspack.exporter.probe_files import DeviceStats, read_probe_dir
from obspack.probe import snapshot, write_atomic

NS = "pid:[4026531836]"
OTHER_NS = "pid:[4026532999]"
FIGURES = {
    "reserved_bytes": 100.0,
    "allocated_bytes": 60.0,
    "inactive_split_bytes": 25.0,
    "num_alloc_retries": 2.0,
    "num_ooms": 1.0,
}


def write(
    directory: Path, pid: int, *, pidns: str | None = NS, age_s: float = 0.0, devices: object = None
) -> Path:
    """A probe file for ``pid`` whose mtime is ``age_s`` seconds in the past."""
    document = snapshot(pid, {"0": FIGURES}, 5.0, time.time())
    document["pidns"] = pidns
    if devices is not None:
        document["devices"] = devices
    path = directory / f"{pid}.json"
    write_atomic(path, document)
    stamp = time.time() - age_s
    os.utime(path, (stamp, stamp))
    return path


def read(directory: Path, alive: set[int] | None = None, own_pidns: str | None = NS) -> list[DeviceStats]:
    return read_probe_dir(
        directory,
        now=time.time(),
        own_pidns=own_pidns,
        max_age_s=60,
        pid_alive=lambda pid: pid in (alive or set()),
    )


def test_fresh_live_file_is_read(tmp_path: Path) -> None:
    write(tmp_path, 7)
    assert read(tmp_path, alive={7}) == [DeviceStats("7", "0", 100.0, 60.0, 25.0, 2.0, 1.0)]


def test_stale_file_is_ignored_even_if_the_pid_lives(tmp_path: Path) -> None:
    write(tmp_path, 7, age_s=61)
    write(tmp_path, 8, age_s=59)
    assert [d.pid for d in read(tmp_path, alive={7, 8})] == ["8"]


def test_dead_pid_in_our_namespace_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, 7)
    write(tmp_path, 8)
    assert [d.pid for d in read(tmp_path, alive={8})] == ["8"]


def test_other_namespace_relies_on_staleness_only(tmp_path: Path) -> None:
    # a sidecar without a shared PID namespace cannot see vLLM's pids: a fresh file counts
    write(tmp_path, 7, pidns=OTHER_NS)
    write(tmp_path, 8, pidns=OTHER_NS, age_s=120)
    assert [d.pid for d in read(tmp_path, alive=set())] == ["7"]


def test_unknown_own_namespace_never_checks_liveness(tmp_path: Path) -> None:
    write(tmp_path, 7)
    assert [d.pid for d in read(tmp_path, alive=set(), own_pidns=None)] == ["7"]


def test_several_processes_and_devices_sorted(tmp_path: Path) -> None:
    write(tmp_path, 30, devices={"1": FIGURES, "0": FIGURES})
    write(tmp_path, 4)
    assert [(d.pid, d.device) for d in read(tmp_path, alive={4, 30})] == [
        ("4", "0"),
        ("30", "0"),
        ("30", "1"),
    ]


@pytest.mark.parametrize(
    "devices",
    [
        "not a dict",
        {"0": "nope"},
        {"0": {**FIGURES, "num_ooms": -1}},
        {"0": {**FIGURES, "reserved_bytes": "100"}},
        {"0": {**FIGURES, "reserved_bytes": True}},
        {"0": {k: v for k, v in FIGURES.items() if k != "num_ooms"}},
    ],
    ids=["devices-not-dict", "device-not-dict", "negative", "string", "bool", "missing-key"],
)
def test_malformed_devices_are_skipped(tmp_path: Path, devices: object) -> None:
    write(tmp_path, 7, devices=devices)
    assert read(tmp_path, alive={7}) == []


def test_foreign_and_broken_files_are_skipped(tmp_path: Path) -> None:
    write(tmp_path, 7)
    (tmp_path / "8.json").write_text("{not json")
    (tmp_path / "9.json").write_text("[1, 2]")
    (tmp_path / "notes.json").write_text(json.dumps({"pid": 1}))
    (tmp_path / ".7.json.tmp").write_text("{")
    (tmp_path / "10.json").write_text(
        json.dumps({"pid": 11, "pidns": NS, "devices": {"0": FIGURES}})
    )  # pid mismatch
    (tmp_path / "12.json").mkdir()
    (tmp_path / "13.json").symlink_to(tmp_path / "7.json")
    (tmp_path / "14.json").write_bytes(b" " * (300 * 1024))  # too big to be a probe file
    assert [d.pid for d in read(tmp_path, alive={7, 8, 9, 10, 11, 12, 13, 14})] == ["7"]


def test_missing_directory_gives_nothing(tmp_path: Path) -> None:
    assert read(tmp_path / "absent") == []


def test_default_liveness_check_sees_this_process(tmp_path: Path) -> None:
    from obspack.probe import pid_namespace

    write(tmp_path, os.getpid(), pidns=pid_namespace())
    found = read_probe_dir(tmp_path, now=time.time(), own_pidns=pid_namespace())
    assert [d.pid for d in found] == [str(os.getpid())]


def test_default_liveness_check_retires_an_exited_process(tmp_path: Path) -> None:
    import subprocess
    import sys

    from obspack.probe import pid_namespace

    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    write(tmp_path, int(child.stdout), pidns=pid_namespace())
    assert read_probe_dir(tmp_path, now=time.time(), own_pidns=pid_namespace()) == []


@pytest.mark.parametrize("body", [b"[" * 100_000, b'{"a":' * 100_000, b'{"pid": 9, "x": ' + b"[" * 300 + b"]" * 300 + b"}"])
def test_a_deeply_nested_file_costs_only_itself(tmp_path: Path, body: bytes) -> None:
    """JSON nested 100,000 levels makes the parser recurse (RecursionError): the file is refused before it
    is parsed, and the other files are read."""
    write(tmp_path, 7)
    (tmp_path / "9.json").write_bytes(body)
    assert [d.pid for d in read(tmp_path, alive={7, 9})] == ["7"]


def test_a_file_that_fails_in_any_other_way_costs_only_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from obspack.exporter import probe_files

    write(tmp_path, 7)
    write(tmp_path, 8)
    real = probe_files._devices

    def devices(pid: str, found: object) -> list[DeviceStats]:
        if pid == "8":
            raise RuntimeError("a bug in reading one file")
        return real(pid, found)

    monkeypatch.setattr(probe_files, "_devices", devices)
    assert [d.pid for d in read(tmp_path, alive={7, 8})] == ["7"]
