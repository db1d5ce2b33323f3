"""Shared fixtures of the exporter tests: fixture payloads, free ports, fake vLLM servers, real binaries."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .fake_vllm import FakeVLLM

FIXTURES = Path(__file__).parent / "fixtures"


def require_binary(name: str) -> str:
    """Path of the executable ``name``; skip the test without it, but fail when CI=true."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not on PATH (install it with scripts/install-test-tools.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message}; CI=true, so this test must not be skipped")
        pytest.skip(message)
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def payload(name: str) -> bytes:
    """The bytes of ``tests/exporter/fixtures/<name>``."""
    return (FIXTURES / name).read_bytes()


def exporter_command() -> list[str]:
    """``obspack exporter`` as installed, else through the interpreter running the tests."""
    installed = shutil.which("obspack")
    return [installed, "exporter"] if installed else [sys.executable, "-m", "obspack", "exporter"]


def wait_for_http(url: str, process: subprocess.Popen, timeout_s: float = 20) -> None:
    """Poll ``url`` until it answers; fail early if ``process`` exits first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(
                f"exited early with {process.returncode}: {process.stderr.read() if process.stderr else ''}"
            )
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{url} did not answer within {timeout_s}s")


@pytest.fixture
def fake_vllm() -> Iterator[FakeVLLM]:
    """A fake vLLM /metrics server on 127.0.0.1 (serving v1_single.prom), stopped after the test."""
    server = FakeVLLM(payload("v1_single.prom"))
    try:
        yield server
    finally:
        server.stop()
