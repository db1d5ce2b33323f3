"""Shared fixtures of the exporter tests: fixture payloads, the exporter command, the fake vLLM."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from obspack.demo.fake_vllm import FakeVLLM

FIXTURES = Path(__file__).parent / "fixtures"


def payload(name: str) -> bytes:
    """The bytes of ``tests/exporter/fixtures/<name>``."""
    return (FIXTURES / name).read_bytes()


def exporter_command() -> list[str]:
    """``obspack exporter`` as installed, else through the interpreter running the tests."""
    installed = shutil.which("obspack")
    return [installed, "exporter"] if installed else [sys.executable, "-m", "obspack", "exporter"]


@pytest.fixture
def fake_vllm() -> Iterator[FakeVLLM]:
    """A fake vLLM /metrics server on 127.0.0.1 (serving v1_single.prom), stopped after the test."""
    server = FakeVLLM(payload=payload("v1_single.prom"))
    try:
        yield server
    finally:
        server.stop()
