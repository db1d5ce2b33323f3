"""promtool on what obspack rendered, for `obspack validate`: `check rules --lint-fatal` on the rule files,
and with `--tests`, `test rules` on the shipped unit tests."""

from __future__ import annotations

import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath

TIMEOUT_S = 120
TEST_TIMEOUT_S = 600  # the SLO tests replay days of samples: about 15 s on one core
MAX_LINES = 40  # of promtool's report per failed test file


def check_rules(promtool: str, files: dict[str, str]) -> list[str]:
    """promtool's complaints about the rule files (name -> text), one line each; none when they pass,
    lint findings (duplicate rules) included."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for rel, text in files.items():
            path = Path(tmp) / Path(rel).name
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        try:
            run = subprocess.run(
                [promtool, "check", "rules", "--lint-fatal", *paths], capture_output=True, text=True, timeout=TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            return [f"promtool check rules did not finish within {TIMEOUT_S}s"]
        except OSError as e:
            return [f"cannot run {promtool}: {e.strerror or e}"]
    if run.returncode == 0:
        return []
    said = [
        " ".join(line.split()).replace(tmp + "/", "")
        for line in (run.stdout + run.stderr).splitlines()
        if line.strip() and not line.strip().startswith(("Checking", "SUCCESS"))
    ]
    return [f"promtool check rules --lint-fatal: {line}" for line in said] or [
        f"promtool check rules --lint-fatal exited with {run.returncode}"
    ]


def run_unit_tests(promtool: str, files: dict[str, str]) -> tuple[int, list[str]]:
    """Run `promtool test rules` on every shipped test file (`tests/*_test.yaml`) of a rendered pack
    (relative path -> text), the files side by side so that the tests find the rule files they name, one
    promtool per test file in parallel. Returns how many test files ran and promtool's complaints, one line
    each (none when every test passes)."""
    tests = sorted(rel for rel in files if PurePosixPath(rel).parent.name == "tests" and rel.endswith("_test.yaml"))
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            if rel.endswith(".yaml"):
                path = Path(tmp, *PurePosixPath(rel).parts)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        with ThreadPoolExecutor(max_workers=max(1, min(len(tests), os.cpu_count() or 1))) as pool:
            reports = list(pool.map(lambda rel: _test_one(promtool, Path(tmp), rel), tests))
    return len(tests), [line for report in reports for line in report]


def _test_one(promtool: str, root: Path, rel: str) -> list[str]:
    path = root / rel
    try:
        run = subprocess.run(
            [promtool, "test", "rules", path.name], cwd=path.parent, capture_output=True, text=True, timeout=TEST_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return [f"promtool test rules {rel}: did not finish within {TEST_TIMEOUT_S}s"]
    except OSError as e:
        return [f"cannot run {promtool}: {e.strerror or e}"]
    if run.returncode == 0:
        return []
    said = [
        line.rstrip()
        for line in (run.stdout + run.stderr).splitlines()
        if line.strip() and not line.strip().startswith(("Unit Testing:", "SUCCESS"))
    ]
    shown = said[:MAX_LINES] + ([f"... and {len(said) - MAX_LINES} more lines"] if len(said) > MAX_LINES else [])
    return [f"promtool test rules {rel}: {line.strip()}" for line in shown] or [
        f"promtool test rules {rel}: exited with {run.returncode}"
    ]
