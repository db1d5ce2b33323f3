"""`obspack doctor` against real Prometheus servers holding fleets that do not fit the pack as rendered.

Each fleet has the rendered rules loaded and evaluated, so what the doctor predicts for the panels is held
against what their queries really return (tests/doctor/oracle.py); every other finding it must make is
listed, and nothing else may appear.

Each fleet's server runs only while its tests do (evaluating the whole pack every 2 s takes about a fifth
of a core): the fleets of one test are function fixtures, and the fleet of two tests comes last.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from obspack.config import ObspackConfig
from obspack.demo.fleet import FleetSpec
from obspack.pack import build
from tests.doctor import oracle
from tests.doctor.shapes import NO_PRICES, YOUNG_RECORDS, Served, Shape, generation, serving

pytestmark = [pytest.mark.e2e, pytest.mark.tool]

PACK = build(ObspackConfig())
GROUPS = [g.to_dict() for g in PACK.recording_groups + PACK.alert_groups]
TWO_CLUSTERS = FleetSpec(pods=4, duration_s=1800, step_s=30)
ONE_CLUSTER = FleetSpec(pods=4, clusters=("gpu-east",), duration_s=1800, step_s=30)


def without_panels(report: dict) -> set[tuple[str, str, str]]:
    return {f for f in oracle.findings(report) if f[1] != "panel"}


def panel_findings(report: dict) -> set[tuple[str, str]]:
    return {(level, subject) for level, topic, subject in oracle.findings(report, "panel")}


def single_value_variables(label: str) -> set[str]:
    """`dashboard / $variable` of the variables that take one value of `label` (no All)."""
    from obspack.pack.walk import variables

    return {f"{v.dashboard} / ${v.name}" for v in variables(PACK) if v.label == label and v.all_value is None}


# ---------------------------------------------------------------------------------------------------
# No kube-state-metrics, cAdvisor without image, an alert rule that fails to evaluate


def failing_groups() -> list[dict]:
    groups = copy.deepcopy(GROUPS)
    rule = next(r for g in groups for r in g["rules"] if r.get("alert") == "VLLMZeroThroughput")
    rule["expr"] = (
        f'label_replace({rule["expr"]}, "x", "$1", "pod", "(")'  # an invalid regex: fails at evaluation
    )
    return groups


@pytest.fixture
def no_ksm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    shape = Shape(TWO_CLUSTERS, drop=("kube_",), strip={"container_": ("image",)})
    with serving(shape, tmp_path_factory.mktemp("no-ksm"), failing_groups()) as served:
        yield served


def test_missing_kube_state_metrics_and_a_failing_rule(no_ksm: Served) -> None:
    code, report = oracle.doctor(no_ksm.prom.url, "--time", str(no_ksm.summary.end))
    assert panel_findings(report) == oracle.panels(no_ksm.prom, PACK, report, dropped=("kube_",))
    assert ("problem", "vllm-pod-memory-planes / Restarts in range") in panel_findings(report)
    assert without_panels(report) == {
        ("problem", "alert", "VLLMContainerOOMKilled"),
        ("problem", "alert", "VLLMContainerRestarted"),
        # the autoscalers are kube-state-metrics' HPAs and pending pods
        ("problem", "alert", "VLLMAutoscalerThrashing"),
        ("problem", "alert", "VLLMAutoscalerMaxedOut"),
        ("problem", "alert", "VLLMAutoscalerScaleUpBlocked"),
        ("problem", "rules", "obspack-vllm-engine.alerts / VLLMZeroThroughput"),
        ("note", "rules", "obspack-vllm-engine.alerts"),
        ("note", "source", "kube-state-metrics"),
        ("note", "source", "cAdvisor"),
        YOUNG_RECORDS,
        NO_PRICES,
    }
    assert code == 1
    assert "invalid regular expression" in oracle.message(
        report, "obspack-vllm-engine.alerts / VLLMZeroThroughput"
    )
    assert "VLLMZeroThroughput differs in query" in oracle.message(report, "obspack-vllm-engine.alerts")
    assert "kube_pod_container_status_restarts_total[15m]: never present" in oracle.message(
        report, "VLLMContainerOOMKilled"
    )
    assert "no image label" in oracle.message(report, "cAdvisor")


# ---------------------------------------------------------------------------------------------------
# cAdvisor without container names, dcgm-exporter gone for 20 minutes, vLLM V1 only, no CUDA probe


@pytest.fixture
def gone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    shape = Shape(
        TWO_CLUSTERS,
        strip={"container_": ("container", "image")},
        stop={"DCGM_": 1200},
        generations=("v1",),
        drop=("obspack_cuda_",),
    )
    with serving(shape, tmp_path_factory.mktemp("gone"), GROUPS) as served:
        yield served


def test_a_source_gone_a_label_missing_and_an_optional_probe_off(gone: Served, tmp_path: Path) -> None:
    code, report = oracle.doctor(gone.prom.url, "--time", str(gone.summary.end))
    assert panel_findings(report) == oracle.panels(gone.prom, PACK, report)
    assert without_panels(report) == {
        ("problem", "alert", "VLLMHostMemoryNearLimit"),
        ("problem", "alert", "VLLMGPUMemoryNearFull"),
        ("problem", "alert", "VLLMCUDAAllocatorFragmentationHigh"),
        # no GPU is counted without DCGM here (no kube-state-metrics GPU requests either), so no price is missing
        ("problem", "alert", "VLLMGPUsMostlyIdle"),
        ("problem", "alert", "VLLMCostPerMillionTokensRising"),
        ("note", "source", "dcgm-exporter"),
        ("note", "source", "cAdvisor"),
        *(("note", "variable", v) for v in single_value_variables("instance")),
        YOUNG_RECORDS,
    }
    assert code == 1
    assert "gone: last seen 20m ago" in oracle.message(report, "VLLMGPUMemoryNearFull")
    assert "label container never appears" in oracle.message(report, "VLLMHostMemoryNearLimit")
    vllm = next(s for s in report["sources"] if s["title"] == "vLLM")["details"]
    assert vllm["generations"] == dict(Counter(generation(p) for p in gone.summary.pods))
    advice = yaml.safe_load(report["advice"]["yaml"])
    assert advice == {"alerts": {"VLLMCUDAAllocatorFragmentationHigh": {"enabled": False}}}
    fixed_code, fixed = oracle.doctor(
        gone.prom.url, "--time", str(gone.summary.end), config=advice, tmp=tmp_path
    )
    assert "VLLMCUDAAllocatorFragmentationHigh" not in {s for _, _, s in oracle.findings(fixed, "alert")}


# ---------------------------------------------------------------------------------------------------
# The cluster label on every source but dcgm-exporter: the GPU attribution's join matches nothing, so the
# GPU page's hidden $gpu_instance lists nothing and its per-GPU queries hold `instance=~""`. One root cause,
# printed first, with everything it breaks under it and the fix.


@pytest.fixture
def partial_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    shape = Shape(TWO_CLUSTERS, strip={"DCGM_": ("cluster",)})
    with serving(shape, tmp_path_factory.mktemp("partial-cluster"), GROUPS) as served:
        yield served


def test_a_cluster_label_missing_on_one_source_is_the_one_cause_printed_first(partial_cluster: Served) -> None:
    from typer.testing import CliRunner

    from obspack.cli import app

    end = str(partial_cluster.summary.end)
    result = CliRunner().invoke(app, ["doctor", "-p", partial_cluster.prom.url, "--time", end])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    start = lines.index("Problems (1)")
    assert lines[start + 1 : start + 7] == [
        "  problem cluster label: `cluster` is on cAdvisor, obspack exporter, kube-state-metrics, vLLM but not on "
        "dcgm-exporter: joins between them match nothing",
        "      so 3 alerts cannot fire: VLLMGPUMemoryNearFull, VLLMGPUsMostlyIdle, VLLMCostPerMillionTokensRising",
        # the pod page's LeaderWorkerSet row too: its GPU record joins on the label (the owner matcher beside
        # it finds nothing for a pod that leads no workers, and is no cause of its own)
        "      so 34 panels would be empty: vllm-pod-memory-planes (4), gpu-by-workload (20), vllm-cost (10)",
        "      so 2 dashboard variables list no values: gpu-by-workload / $gpu_instance, vllm-pod-memory-planes / $gpu_instance",
        "      so 7 more queries return nothing",
        "      fix: add `cluster` to every scrape of dcgm-exporter (external labels reach only remote storage, not "
        "local queries)",
    ]
    assert lines[start + 7] == ""
    assert not any('instance=~""' in line for line in lines), "the consequences are folded, not listed"
    # the four of a healthy fleet without EPP, and the gateway page's errors and flow-control rejections
    assert lines[-1].startswith("1 problem, 0 not checked, 6 notes (exit 1)")
    code, report = oracle.doctor(partial_cluster.prom.url, "--time", end)
    assert [c["kind"] for c in report["causes"]] == ["cluster"]
    assert panel_findings(report) == oracle.panels(partial_cluster.prom, PACK, report)


# ---------------------------------------------------------------------------------------------------
# One cluster without a cluster label, dcgm-exporter's old label names, no SM activity field, and no HTTP
# counter (vLLM before 0.8.3): no availability SLO, while the latency SLOs, recorded under the same
# names, stand


@pytest.fixture(scope="module")  # two tests; last in the file, so it stops as the module ends
def old_names(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    drop = ("DCGM_FI_PROF_SM_ACTIVE", "http_requests_total")
    shape = Shape(ONE_CLUSTER, strip={"": ("cluster",)}, dcgm_old=True, drop=drop)
    with serving(shape, tmp_path_factory.mktemp("old-names"), GROUPS) as served:
        yield served


def test_old_dcgm_names_and_no_cluster_label_fit_with_notes(old_names: Served) -> None:
    code, report = oracle.doctor(old_names.prom.url, "--time", str(old_names.summary.end))
    assert panel_findings(report) == oracle.panels(old_names.prom, PACK, report)
    assert all(level == "note" for level, _ in panel_findings(report))
    expected = {
        ("note", "source", "cluster label"),
        ("note", "source", "dcgm-exporter"),
        *(("note", "variable", v) for v in single_value_variables("cluster")),
        YOUNG_RECORDS,
        NO_PRICES,
    }
    assert without_panels(report) == expected
    assert code == 0
    burns = [a for a in report["alerts"] if a["alert"] == "VLLMErrorBudgetBurn"]
    assert len(burns) == 4 and all(a["can_fire"] for a in burns), "the latency SLOs burn without HTTP"
    assert "DCGM_FI_PROF_GR_ENGINE_ACTIVE instead" in oracle.message(report, "dcgm-exporter")
    dcgm = next(s for s in report["sources"] if s["title"] == "dcgm-exporter")["details"]
    # every GPU a pod holds (a LeaderWorkerSet worker's too) by its old pod label; one idle GPU per node
    holders = (*old_names.summary.pods, *old_names.summary.workers)
    nodes = {(p.cluster, p.node_index) for p in holders}
    assert dcgm["modes"] == {"pod_name": sum(len(p.gpus) for p in holders), "none": len(nodes)}


def test_rules_that_are_not_loaded_are_one_problem(old_names: Served) -> None:
    loaded = old_names.rules.read_text()
    old_names.rules.write_text(yaml.safe_dump({"groups": []}))
    old_names.prom.reload()
    try:
        code, report = oracle.doctor(old_names.prom.url, "--time", str(old_names.summary.end))
    finally:
        old_names.rules.write_text(loaded)
        old_names.prom.reload()
    assert code == 1
    assert {f for f in without_panels(report) if f[0] == "problem"} == {("problem", "rules", "rule groups")}
    assert "none of the pack's" in oracle.message(report, "rule groups")
    assert "ruleSelector" in " ".join(report["advice"]["actions"])
    assert not any(level == "problem" for level, _ in panel_findings(report)), (
        "the fit does not need the rules"
    )
