"""`obspack demo` when a server cannot start: one line that names it, its last error and its log; never the
log of every server, never `error: error:`."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from obspack.cli import app
from obspack.demo import processes
from tests.support.tools import require_tool


def test_a_port_race_lost_every_time_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_tool("prometheus")
    require_tool("alertmanager")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        monkeypatch.setattr(processes, "free_port", lambda: taken.getsockname()[1])
        workdir = tmp_path / "demo"
        result = CliRunner().invoke(app, ["demo", "--workdir", str(workdir)])
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: alertmanager found no port to listen on: 3 free ports of 127.0.0.1 were each taken before it "
        f"could listen (log: {workdir / 'alertmanager.log'})"
    ]
    assert "logs:" not in result.output and "alert timeline" not in result.output


def test_the_stated_duration_is_the_measured_one_everywhere() -> None:
    """README.md, docs/e2e.md and the command's help say how long the demo takes, as narrate.TYPICAL_MINUTES
    records from measured runs."""
    import re

    from obspack.demo.narrate import TYPICAL_MINUTES

    root = Path(__file__).resolve().parents[2]
    help_text = " ".join(CliRunner().invoke(app, ["demo", "--help"]).output.split())  # however it wraps
    stated = {
        "README.md": re.findall(r"\(~([\d.]+) min\)", (root / "README.md").read_text()),
        "docs/e2e.md": re.findall(
            r"obspack demo +# ~([\d.]+) min|The run takes about ([\d.]+) minutes", (root / "docs" / "e2e.md").read_text()
        ),
        "obspack demo --help": re.findall(r"about ([\d.]+) minutes", help_text),
    }
    assert all(stated.values()), stated
    found = {v for values in stated.values() for value in values for v in ([value] if isinstance(value, str) else value) if v}
    assert found == {f"{TYPICAL_MINUTES:g}"}, stated
    assert len(stated["docs/e2e.md"]) == 2
