"""The vmalert output on a real VictoriaMetrics: the rendered promtool incidents, replayed by vmalert.

Every incident of OUT/tests/*_test.yaml is loaded into one VictoriaMetrics (Debian's 1.79), each at its
own base time four hours from the next, and vmalert replays OUT/vmalert/ over all of them at the tests'
one-minute interval. At every promtool check the alerts firing must be the ones promtool expects, at
the check's time or one evaluation either side; and during an incident an alert never fires for
labels promtool never expects while its series last (the quiet neighbours stay quiet the whole time,
not only at the checks).

The same replay of the plain Prometheus files shows why the rewrites exist: MetricsQL's `increase`
counts a restart counter first seen at 3 as three fresh restarts, and sticky OOM reasons page.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from obspack.pack.shipped_tests.alerts import minutes
from obspack.render.files import ALERTS_FILE, RECORDING_FILE
from obspack.render.vmalert import ALERTS_FILE as VM_ALERTS_FILE
from obspack.render.vmalert import RECORDING_FILE as VM_RECORDING_FILE
from tests.support.packs import CONFIGS, render
from tests.support.tools import require_tool
from tests.support.victoria import VictoriaMetrics, expand, replay

START = 1_704_067_200  # 2024-01-01T00:00:00Z: any time far from now works, the rules read no clock
SPACING = 4 * 3600  # between incidents: longer than any incident plus the longest window it reads (1h)
ADDED_BY_VMALERT = {"__name__", "alertname", "alertstate", "alertgroup"}

Labels = frozenset[tuple[str, str]]


@dataclass
class Incident:
    name: str
    base: float
    checks: list[tuple[str, float, set[Labels]]]  # alert, seconds after base, label sets expected firing
    series: list[tuple[str, str]]
    length: float  # seconds from the first sample to the last

    def active(self, t: float) -> bool:
        """While its series last: once they stop, gauges vanish before the windows of rates empty, which
        on any engine turns guards like `unless ... info` off for a while."""
        return self.base <= t <= self.base + self.length


@dataclass
class Replayed:
    interval: float
    incidents: list[Incident]
    firing: dict[tuple[str, Labels], set[float]] = field(default_factory=dict)  # (alert, labels) -> times

    def at(self, alert: str, t: float) -> set[Labels]:
        return {labels for (name, labels), times in self.firing.items() if name == alert and t in times}


# The SLO tests play days of traffic for the 1d and 3d windows: minutes of replay on two cores, so they
# are not replayed. Their *_over_time functions mean the same on MetricsQL; `rate` does not extrapolate
# there (docs/engines.md), which moves a burn rate by the share of a scrape interval in 5 minutes. The
# vmalert file passes `vmalert -dryRun` (tests/render/test_vmalert.py). The cost tickets' tests play a day
# and two weeks at one evaluation an hour and every six hours, a step the other incidents cannot share:
# their sums over time and sums per model mean the same on MetricsQL, and test_vmalert.py counts their hops.
NOT_REPLAYED = {"slo_test.yaml", "cost_test.yaml", "cost-weekly_test.yaml"}


def _incidents(out: Path) -> tuple[float, list[Incident]]:
    incidents, intervals = [], set()
    for path in sorted((out / "tests").glob("*_test.yaml")):
        if path.name in NOT_REPLAYED:
            continue
        doc = yaml.safe_load(path.read_text())
        intervals.add(doc["evaluation_interval"])
        for case in doc["tests"]:
            intervals.add(case["interval"])
            base = START + len(incidents) * SPACING
            checks = [
                (c["alertname"], minutes(c["eval_time"]) * 60,
                 {frozenset(a["exp_labels"].items()) for a in c.get("exp_alerts", [])})
                for c in case["alert_rule_test"]
            ]
            series = [(s["series"], s["values"]) for s in case["input_series"]]
            length = max(len(expand(values)) for _, values in series) - 1
            incidents.append(Incident(case["name"], base, checks, series, length * minutes(case["interval"]) * 60))
    assert len(intervals) == 1, f"one evaluation interval expected, got {intervals}"
    return minutes(intervals.pop()) * 60, incidents


def _replay(vm: VictoriaMetrics, out: Path, rule_files: list[str], incidents: list[Incident], interval: float,
            work: Path) -> Replayed:
    for incident in incidents:
        vm.load(incident.series, incident.base, interval)
    start, end = incidents[0].base, incidents[-1].base + SPACING
    replay(require_tool("vmalert"), [out / f for f in rule_files], vm, start, end, f"{int(interval)}s", work)
    result = Replayed(interval, incidents)
    for sample in vm.export('ALERTS{alertstate="firing"}', start, end):
        labels = frozenset((k, v) for k, v in sample.labels.items() if k not in ADDED_BY_VMALERT)
        result.firing.setdefault((sample.labels["alertname"], labels), set()).add(sample.timestamp)
    return result


@pytest.fixture(scope="module")
def victoria(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VictoriaMetrics]:
    vm = VictoriaMetrics(require_tool("victoria-metrics"), tmp_path_factory.mktemp("victoria-metrics"))
    yield vm
    vm.stop()


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def replayed(request: pytest.FixtureRequest, victoria: VictoriaMetrics,
             tmp_path_factory: pytest.TempPathFactory) -> Replayed:
    """One config's incidents replayed; the second config's go after the first's in time."""
    out = render(request.param, tmp_path_factory.mktemp(f"pack-{request.param}"))
    interval, incidents = _incidents(out)
    offset = sorted(CONFIGS).index(request.param) * 64 * SPACING
    for incident in incidents:
        incident.base += offset
    return _replay(victoria, out, [VM_RECORDING_FILE, VM_ALERTS_FILE], incidents, interval,
                   tmp_path_factory.mktemp("rules"))


def _show(labels: set[Labels]) -> list[dict[str, str]]:
    return sorted((dict(sorted(lab)) for lab in labels), key=str)


def test_the_same_alerts_fire_and_stay_quiet_as_under_promtool(replayed: Replayed) -> None:
    step = replayed.interval
    checked = 0
    for incident in replayed.incidents:
        for alert, at, expected in incident.checks:
            seen = {d: replayed.at(alert, incident.base + at + d) for d in (-step, 0, step)}
            assert expected in seen.values(), (
                f"{incident.name}: {alert} at {at / 60:g}m: promtool expects {_show(expected)}, vmalert fired "
                + "; ".join(f"{(at + d) / 60:g}m: {_show(got)}" for d, got in seen.items())
            )
            checked += 1
    assert checked >= 15 and any(expected for i in replayed.incidents for _, _, expected in i.checks)


def test_quiet_neighbours_never_fire_during_an_incident(replayed: Replayed) -> None:
    for incident in replayed.incidents:
        alerts = {alert for alert, _, _ in incident.checks}
        expected = {labels for _, _, firing in incident.checks for labels in firing}
        unexpected = {
            (alert, labels): sorted((t - incident.base) / 60 for t in times if incident.active(t))
            for (alert, labels), times in replayed.firing.items()
            if alert in alerts and labels not in expected and any(incident.active(t) for t in times)
        }
        assert not unexpected, f"{incident.name}: fired on vmalert only: {unexpected}"


def test_plain_promql_on_victoriametrics_pages_for_sticky_oom_reasons(
    victoria: VictoriaMetrics, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Without the rewrites the same replay fails: the Prometheus file's `increase` on VictoriaMetrics
    takes restart counters first seen at 3 (a restart long ago) for three new restarts."""
    out = render("defaults", tmp_path_factory.mktemp("pack-plain"))
    interval, incidents = _incidents(out)
    oom = [i for i in incidents if any(alert == "VLLMContainerOOMKilled" for alert, _, _ in i.checks)]
    for incident in oom:
        incident.base += 200 * SPACING
    plain = _replay(victoria, out, [RECORDING_FILE, ALERTS_FILE], oom, interval, tmp_path_factory.mktemp("plain"))
    alert, at, expected = next(c for c in oom[0].checks if c[2])
    fired = plain.at(alert, oom[0].base + at)
    assert expected < fired, _show(fired)
    assert {dict(labels)["pod"] for labels in fired - expected} == {"llama-2", "llama-0"}  # llama-0 of prod-b
