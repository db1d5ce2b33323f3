"""What really happens on the server, to hold the doctor's predictions against.

The doctor predicts from the inputs which panels would be empty. The oracle runs every panel query as
Grafana would (a range query over the last five minutes, variables filled with the doctor's own samples)
on a real Prometheus where the rendered rules are loaded and have run, and says which panels are empty.
It knows the two event series by name (a test-side fact, not the doctor's list): panels reading them are
empty by design while their source is there. A panel in a row repeated over a variable whose query finds
nothing (a vLLM feature nobody runs) is not there at all: no finding.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from obspack.cli import app
from obspack.demo.prometheus import Prometheus
from obspack.pack import Pack
from obspack.pack.walk import targets, variables
from obspack.promql import grafana_to_promql

# event series -> the metric prefix of the source that reports them (None: Prometheus itself)
EVENT_SERIES = {
    "ALERTS": None, "kube_pod_container_status_last_terminated_reason": "kube_",
    # the EPP's errors and flow-control outcomes: only after a request failed or flow control rejected one
    "llm_d_epp_request_error_total": None, "inference_objective_request_error_total": None,
    "inference_model_request_error_total": None, "llm_d_epp_flow_control_requests_total": None,
    "inference_extension_flow_control_request_queue_duration_seconds_count": None,
}  # fmt: skip
# GPU states of the cost records a healthy fleet may not be in: a query that selects only them waits too
WAITING_STATES = re.compile(r',?\s*state(="idle"|="asleep"|=~"idle\|asleep")')
WINDOW_S = 300  # what a panel shows for the last five minutes: older data does not count


def _reads(expr: str, metric: str) -> bool:
    return re.search(rf"(?<![\w:]){re.escape(metric)}(?![\w:])", expr) is not None


def _has_data(prom: Prometheus, expr: str) -> bool:
    """Data now, or within the window (the records are young: VictoriaMetrics looks back one step only)."""
    now = time.time()
    if prom.query(expr, now):
        return True
    return any(s.get("values") for s in prom.query_range(expr, now - WINDOW_S, now, 30))


def panels(
    prom: Prometheus, pack: Pack, report: dict[str, Any], dropped: tuple[str, ...] = ()
) -> set[tuple[str, str]]:
    """(level, subject) of the panel findings the doctor must make, from what the queries really return.

    A panel is empty for a sample when none of its queries returns data: a problem, unless every query
    reads an event series whose source is there (a note: empty by design). A panel that shows data for
    every sample gets a note for each of its queries that is empty with the default values."""
    samples = {d["dashboard"]: d["samples"] for d in report["dashboards"]}
    by_panel: dict[tuple[str, int], list] = {}
    for target in targets(pack):
        by_panel.setdefault((target.dashboard, target.panel_id), []).append(target)
    rows = {(v.dashboard, v.name): v.selector for v in variables(pack) if v.function == "query_result"}
    expected = set()
    for (dashboard, _), queries in by_panel.items():
        row = queries[0].row
        if row and not prom.query(grafana_to_promql(rows[(dashboard, row)], samples[dashboard][0]["values"]), time.time()):
            continue  # the feature is not in use: Grafana shows its row closed, titled None
        data = {
            q.where: [_has_data(prom, grafana_to_promql(q.expr, s["values"])) for s in samples[dashboard]]
            for q in queries
        }

        defaults = samples[dashboard][0]["values"]

        def by_design(query, defaults=defaults) -> bool:  # noqa: ANN001
            if WAITING_STATES.search(query.expr):  # by design where the records have GPUs in another state
                return _has_data(prom, grafana_to_promql(WAITING_STATES.sub("", query.expr), defaults))
            return any(
                _reads(query.expr, m) and not (src and src in dropped) for m, src in EVENT_SERIES.items()
            )

        empty_for = [i for i in range(len(samples[dashboard])) if not any(d[i] for d in data.values())]
        if empty_for:
            design = empty_for[0] == 0 and all(by_design(q) for q in queries)
            expected.add(("note" if design else "problem", queries[0].panel_where))
            continue
        expected |= {("note", q.where) for q in queries if not data[q.where][0]}
    return expected


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
