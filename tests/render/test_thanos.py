"""Thanos Ruler files: the Prometheus groups plus `partial_response_strategy`, and nothing else."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from obspack.render import thanos
from obspack.render.files import ALERTS_FILE, RECORDING_FILE
from obspack.rules.model import AlertRule, RecordingRule, RuleGroup
from tests.support.packs import CONFIGS, pack, render
from tests.support.tools import require_tool

PAIRS = {RECORDING_FILE: thanos.RECORDING_FILE, ALERTS_FILE: thanos.ALERTS_FILE}


@pytest.fixture(params=sorted(CONFIGS))
def rendered(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return render(request.param, tmp_path)


def _promtool_check(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([require_tool("promtool"), "check", "rules", *map(str, files)], capture_output=True, text=True)


def test_without_the_thanos_field_the_files_are_the_prometheus_files_and_pass_promtool(rendered: Path) -> None:
    for prometheus_file, thanos_file in PAIRS.items():
        doc = yaml.safe_load((rendered / thanos_file).read_text())
        assert {g.pop(thanos.FIELD) for g in doc["groups"]} <= {"warn", "abort"}
        assert doc == yaml.safe_load((rendered / prometheus_file).read_text()), thanos_file
        stripped = rendered / f"stripped-{Path(thanos_file).name}"
        stripped.write_text(yaml.safe_dump(doc, sort_keys=False))
        done = _promtool_check(stripped)
        assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_rejects_the_thanos_field(rendered: Path) -> None:
    """Why the Thanos files are separate: the field is Thanos Ruler's own."""
    done = _promtool_check(rendered / thanos.ALERTS_FILE)
    assert done.returncode != 0 and thanos.FIELD in done.stdout + done.stderr


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_alerts_abort_and_the_pack_records_warn_unless_they_leave_sleeping_engines_out(config: str) -> None:
    """The SLO event rates leave engines put to sleep out with `unless`: a store that fails to answer for
    the sleep state would count their 503s as errors, so those groups abort; so does the autoscaling signal
    (an autoscaler is better without it than with a low one), and the GPU attribution, whose pod roles take
    a pod's name only where kube-state-metrics gives it no role label (a missing store would bill a
    `prefill-decode` pod named like a decode pod as decode only), and the fleet latencies, which leave the
    prefill-only pods out as the SLOs do; every other record warns."""
    p = pack(config)
    assert {thanos.partial_response_strategy(g, p.cluster_label) for g in p.alert_groups} == {"abort"}
    strategies = {g.name: thanos.partial_response_strategy(g, p.cluster_label) for g in p.recording_groups}
    negating = {g.name for g in p.recording_groups if any(re.search(r"\bunless\b", r.expr) for r in g.rules)}
    assert negating and negating == {name for name in strategies if name.startswith("obspack-slo-") and
                                     not name.endswith(("-windows.rules", "-period.rules", "-goodput.rules"))} | {
        "obspack-vllm-autoscaling.rules", "obspack-dcgm-attribution.rules",
        *(f"obspack-vllm-latency-{family}.rules" for family in ("time-to-first-token", "inter-token-latency",
                                                               "e2e-request-latency"))}  # fmt: skip
    assert strategies == {name: "abort" if name in negating else "warn" for name in strategies}


SAFE = {
    "keeps the cluster in by": "sum by (cluster, pod) (rate(x[5m]))",
    "drops another label with without": "max without (pid) (x)",
    "joins on the cluster": "a * on (cluster, pod) group_left (model) b",
    "topk within a cluster": "topk by (cluster, gpu) (1, x)",
    "or falls back within a series": "x or y",
    "joins a table of constants on another label": 'x * on (le) group_left (tokens) label_replace(vector(1), "le", "1", "", "")',
    "the same join inside a sum by the cluster": 'sum by (cluster) (x * on (le) group_left label_replace(vector(1), "le", "1", "", ""))',
}
UNSAFE = {
    "sums over clusters": "sum by (pod) (x)",
    "aggregates everything": "count(x)",
    "drops the cluster with without": "sum without (cluster) (x)",
    "joins across clusters": "a * on (pod) group_left b",
    "ignores the cluster in a match": "a / ignoring (cluster) b",
    "negates with unless": "x unless on (cluster, pod) y",
    "negates with absent": "absent(x)",
    "a join of constants inside does not excuse a join across clusters outside": "(x * on (le) group_left vector(1)) * on (pod) y",
}


@pytest.mark.parametrize("case", sorted(SAFE))
def test_safe_on_partial_data(case: str) -> None:
    assert thanos.safe_on_partial_data(SAFE[case], "cluster")


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_unsafe_on_partial_data(case: str) -> None:
    assert not thanos.safe_on_partial_data(UNSAFE[case], "cluster")


def test_one_unsafe_record_makes_its_group_abort() -> None:
    group = RuleGroup("g", (RecordingRule("a:b:sum", SAFE["keeps the cluster in by"]),
                            RecordingRule("a:c:sum", UNSAFE["sums over clusters"])))
    assert thanos.partial_response_strategy(group, "cluster") == "abort"
    assert thanos.partial_response_strategy(RuleGroup("g", group.rules[:1]), "cluster") == "warn"
    alert = AlertRule("A", "vector(1)", "0m", pack("defaults").alerts[0].severity, "s.", "d", "r")
    assert thanos.partial_response_strategy(RuleGroup("g", (alert,)), "cluster") == "abort"
