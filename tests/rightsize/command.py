"""`obspack rightsize` through the CLI, as the tests drive it."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from obspack.cli import app
from obspack.demo.rightsize_fleet import END

GIB = 1024**3
MIB = 1024**2


def run(url: str, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `obspack rightsize --prometheus URL --time END ARGS`."""
    result = CliRunner().invoke(app, ["rightsize", "--prometheus", url, "--time", str(END), *args])
    return result.exit_code, result.stdout, result.stderr


def report(url: str, *args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(url, "--json", *args)
    assert code in (0, 1, 2), err
    return code, json.loads(out)


def workload(found: dict[str, Any], namespace: str, cluster: str = "gpu-east", name: str | None = None) -> dict[str, Any]:
    matches = [
        w
        for w in found["workloads"]
        if w["namespace"] == namespace and w["cluster"] == cluster and (name is None or w["name"] == name)
    ]
    assert len(matches) == 1, [(w["cluster"], w["namespace"], w["name"]) for w in found["workloads"]]
    return matches[0]


def knob(w: dict[str, Any], flag: str) -> dict[str, Any]:
    return next(k for k in w["vllm_args"] if k["flag"] == flag)
