"""The rightsize fleet (obspack/demo/rightsize_fleet.py), written once per session for every module that serves it."""

from __future__ import annotations

from pathlib import Path

import pytest

from obspack.demo.rightsize_fleet import write_fleet


@pytest.fixture(scope="session")
def fleet_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rightsize-fleet") / "fleet.om"
    write_fleet(path)
    return path
