"""A command started with its standard output closed (`obspack ... >&-`, where Python sets sys.stdout to
None) ends with one error line when it has something to print, never a traceback; a pipe whose reader left
is tests/render/test_write.py's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLOSED = "error: cannot write to standard output: standard output is closed\n"


def run_closed(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "obspack", *args],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),  # the child starts with descriptor 1 closed
    )


@pytest.mark.parametrize("args", [("--version",), ("render", "--help")], ids=" ".join)
def test_a_command_that_prints_ends_with_one_line(args: tuple[str, ...]) -> None:
    done = run_closed(*args)
    assert (done.returncode, done.stderr) == (1, CLOSED)


def test_render_writes_the_pack_then_says_it_could_not_print_its_summary(tmp_path: Path) -> None:
    config = tmp_path / "obspack.yaml"  # named, so that no note on which config was read goes to stderr
    config.write_text("{}\n")
    done = run_closed("render", "--config", str(config), "--out", str(tmp_path / "pack"))
    assert (done.returncode, done.stderr) == (1, CLOSED)
    assert (tmp_path / "pack" / "README.md").exists()
