"""What really happens on the server, to hold the doctor's predictions against.

The doctor predicts from the inputs which panels would be empty. The oracle runs every panel query as
Grafana would (a range query over the last half hour, variables filled with the doctor's own samples)
on a real Prometheus where the rendered rules are loaded and have run, and says which panels are empty.
It knows the two event series by name (a test-side fact, not the doctor's list): panels reading them are
empty by design while their source is there.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from obspack.cli import app
from obspack.promql import grafana_to_promql, targets
from obspack.render.bundle import Pack
from tests.support.prometheus import Prometheus

# event series -> the metric prefix of the source that reports them (None: Prometheus itself)
EVENT_SERIES = {"ALERTS": None, "kube_pod_container_status_last_terminated_reason": "kube_"}
WINDOW_S = 1800


@dataclass(frozen=True)
class Expected:
    problems: set[str]  # panel subjects the doctor must report as problems
    by_design: set[str]  # panel subjects the doctor must report as notes


def _reads(expr: str, metric: str) -> bool:
    return re.search(rf"(?<![\w:]){re.escape(metric)}(?![\w:])", expr) is not None


def _has_data(prom: Prometheus, expr: str) -> bool:
    now = time.time()
    return any(s.get("values") for s in prom.query_range(expr, now - WINDOW_S, now, 60))


def panels(prom: Prometheus, pack: Pack, report: dict[str, Any], dropped: tuple[str, ...] = ()) -> Expected:
    """Panels empty for a sample of the doctor's report, split into broken and empty by design."""
    samples = {d["dashboard"]: d["samples"] for d in report["dashboards"]}
    problems, by_design = set(), set()
    for target in targets(pack):
        per_sample = [
            _has_data(prom, grafana_to_promql(target.expr, s["values"])) for s in samples[target.dashboard]
        ]
        events = [
            m
            for m, source in EVENT_SERIES.items()
            if _reads(target.expr, m) and not (source and source in dropped)
        ]
        if not per_sample[0] and events:
            by_design.add(target.where)
        elif not all(per_sample):
            problems.add(target.where)
    return Expected(problems, by_design)


def doctor(
    url: str, *args: str, config: dict[str, Any] | None = None, tmp: Path | None = None
) -> tuple[int, dict[str, Any]]:
    """Run `obspack doctor --json` through the CLI; its exit code and report."""
    extra = list(args)
    if config is not None:
        assert tmp is not None
        path = tmp / "obspack.yaml"
        path.write_text(json.dumps(config))
        extra += ["--config", str(path)]
    result = CliRunner().invoke(app, ["doctor", "--prometheus", url, "--json", *extra])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def findings(report: dict[str, Any], topic: str | None = None) -> set[tuple[str, str, str]]:
    """(level, topic, subject) of every finding, or of one topic's."""
    return {(f["level"], f["topic"], f["subject"]) for f in report["findings"] if topic in (None, f["topic"])}


def message(report: dict[str, Any], subject: str) -> str:
    return next(f["message"] for f in report["findings"] if f["subject"] == subject)
