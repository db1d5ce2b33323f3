"""`promtool check rules --lint-fatal` on rule files obspack rendered, for `obspack validate`."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

TIMEOUT_S = 120


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
