"""`obspack doctor` against a real Prometheus holding a healthy fleet with the rendered rules loaded.

The fleet has two clusters with the same pod names, vLLM V1 and V0 pods, router copies, HA
kube-state-metrics and DCGM in both label modes (obspack/demo/fleet.py). The doctor must find nothing that
breaks the pack, say what the sources look like, and, run with a config that does not fit the fleet, name
exactly what breaks and the change that fixes it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from obspack.config import ObspackConfig
from obspack.demo.fleet import FleetSpec
from obspack.doctor.api import Connection, PrometheusAPI
from obspack.doctor.checks import SelectorChecks, State, Window
from obspack.doctor.fit import evaluate_records
from obspack.doctor.needs import MAX_WRITTEN, leaves, matches, read_pack, record_refs
from obspack.pack import build
from tests.doctor import oracle
from tests.doctor.shapes import EVALUATION_S, NO_PRICES, YOUNG_RECORDS, Served, Shape, generation, serving

pytestmark = [pytest.mark.e2e, pytest.mark.tool]

PACK = build(ObspackConfig())
GROUPS = [g.to_dict() for g in PACK.recording_groups + PACK.alert_groups]
SHAPE = Shape(FleetSpec(pods=4, duration_s=1800, step_s=30))
VLLM_ALERTS = {  # every alert that reads vLLM engine series and nothing else that stands in for them
    "VLLMKVCacheUsageHigh",
    "VLLMKVCacheUsageCritical",
    "VLLMRequestQueueBacklog",
    "VLLMZeroThroughput",
    "VLLMTargetDown",
    "VLLMRequestPreemptions",
    "VLLMPrefixCacheHitRateLow",
    "VLLMPrefillDecodeImbalance",  # each side's queue and KV cache
    "VLLMErrorBudgetBurn",  # its SLO records read the engines' histograms and HTTP counters
    "VLLMAutoscalerMaxedOut",  # the saturation record reads the engines' queues and KV caches
    "VLLMGPUsMostlyIdle",  # GPUs serve or sit idle by the engines' running requests and tokens
    "VLLMCostPerMillionTokensRising",  # the engines' tokens
    # the features' alerts: absent feature series are no fault, but a selector that hides the engines is
    "VLLMKVTransferFailures",
    "VLLMAdmissionRejections",
    "VLLMKVOffloadAllocationFailures",
    "VLLMSpecDecodeAcceptanceLow",
}


def changed_groups(config: dict) -> set[str]:
    """The groups a config renders differently from the default one (the rules loaded on the server)."""
    variant = build(ObspackConfig.model_validate(config))
    pairs = zip(variant.recording_groups + variant.alert_groups, PACK.recording_groups + PACK.alert_groups)
    return {ours.name for ours, loaded in pairs if ours.to_dict() != loaded.to_dict()}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(SHAPE, tmp_path_factory.mktemp("healthy"), GROUPS) as served:
        yield served


@pytest.fixture(scope="module")
def healthy(fleet: Served) -> tuple[int, dict]:
    return oracle.doctor(fleet.prom.url, "--time", str(fleet.summary.end))


def test_a_healthy_fleet_has_no_problem_only_panels_empty_by_design_and_young_records(
    fleet: Served, healthy
) -> None:
    code, report = healthy
    expected = oracle.panels(fleet.prom, PACK, report)
    assert expected and all(level == "note" for level, _ in expected), "only panels empty by design"
    assert oracle.findings(report) == {(level, "panel", subject) for level, subject in expected} | {
        YOUNG_RECORDS, NO_PRICES
    }
    assert code == 0 and report["exit_code"] == 0
    assert all(a["can_fire"] for a in report["alerts"]) and len(report["alerts"]) == sum(
        len(g.rules) for g in PACK.alert_groups
    )


@pytest.mark.parametrize(
    "config",
    [{}, {"slos": {"models": [{"model_regex": "Qwen/.*", "time_to_first_token": {"threshold": 5}}]}}],
    ids=["defaults", "per-model SLOs"],
)
def test_every_rule_of_every_record_returns_series_from_its_written_out_expression(
    fleet: Served, config: dict
) -> None:
    """At the fleet's last sample no record is written yet: each rule is evaluated from its expression,
    the records it reads written out (the SLO records: a rule per SLO, its model branches joined with
    `or`, read with matchers). On this fleet each must return series, and the models of every branch."""
    needs = read_pack(build(ObspackConfig.model_validate(config)))
    at = fleet.summary.end
    with PrometheusAPI(Connection(fleet.prom.url)) as api:
        checker = SelectorChecks(api, Window(at, 86400), {})
        checks = checker.run(leaf for rule in needs.recording_rules for leaf in leaves(rule.need))
        records = evaluate_records(api, needs, checks, at)
    wrong = {}
    for rule, data in ((r, d) for name, rules in needs.records.items() for r, d in zip(rules, records[name])):
        if len(needs.written(rule)) > MAX_WRITTEN:  # not asked (cost records): judged by what it reads
            if data.verdict.state is not State.OK:
                wrong[rule.title] = f"too long to ask, and its inputs fail: {data.verdict.why}"
            continue
        selectors = [x.selector for x in (*leaves(rule.need), *record_refs(rule.need))]
        branches = {m for s in selectors for m in s.matchers if m[0] == "model_name" and m[1] in ("=~", "!~")}
        models = {row["model_name"] for row in data.rows or () if "model_name" in row}  # read by model
        if data.verdict.state is not State.OK or not data.rows:
            wrong[rule.title] = data.verdict.why or "no series"
        elif models and any(not any(matches(m, model) for model in models) for m in branches):
            wrong[rule.title] = f"models {sorted(models)}: a branch of {sorted(branches)} has none"
    assert wrong == {}


def test_the_sources_are_described_as_the_fleet_has_them(fleet: Served, healthy) -> None:
    _, report = healthy
    sources = {s["title"]: s for s in report["sources"]}
    pods = fleet.summary.pods
    generations = Counter(generation(p) for p in pods)
    assert sources["vLLM"]["details"]["generations"] == dict(generations)
    assert sources["vLLM"]["details"]["router_series"] == len(pods)  # one router copy per pod's gauge
    assert sources["kube-state-metrics"]["details"]["replicas"] == 2
    dcgm = sources["dcgm-exporter"]["details"]
    everyone = fleet.summary.all_pods  # LeaderWorkerSet workers hold GPUs too
    held = Counter("pod" if p.dcgm_mode == "pod" else "exported_pod" for p in everyone for _ in p.gpus)
    nodes = {(p.cluster, p.node) for p in everyone}
    assert dcgm["modes"] == {**held, "none": len(nodes)}  # one idle GPU per node
    assert sources["cluster label"]["details"]["clusters"] == sorted(SHAPE.spec.clusters)
    assert sources["obspack exporter"]["details"] == {
        "pods": len(pods),
        "cuda_probe": len(pods),
        "failing": 0,
    }
    assert {s["title"] for s in report["sources"] if not s["found"]} == set()


def test_the_vllm_features_each_pod_runs_are_named_with_their_connector(fleet: Served, healthy) -> None:
    """The sources section says which pods run which feature and through which connector or spec; features
    nobody here runs (LoRA, sleep mode, Mooncake, simple offload on this small fleet) are no finding: their
    alerts can fire once an engine uses them, and their dashboard rows stay closed."""
    code, report = healthy
    features = next(s for s in report["sources"] if s["title"] == "vLLM features")
    pods = fleet.summary.pods

    def named(*using: str) -> list[str]:
        return sorted(f"{p.cluster}/{p.namespace}/{p.name}" for p in pods if p.uses(*using))

    details = features["details"]
    assert details["disaggregation"]["named"] == named("nixl-decode", "nixl-prefill", "mooncake-decode") != []
    assert details["kv_offload"]["connectors"] == {"CPU spec": len(named("offload-cpu"))}
    assert details["spec_decode"]["pods"] == len(named("spec_decode")) > 0
    assert details["admission"]["pods"] == len(named("admission")) > 0
    assert details["lora"]["pods"] == 0 and details["sleep"]["pods"] == 0
    assert details["sleep"]["reporting"] == len([p for p in pods if p.release == "0.33"])
    assert "disaggregated prefill/decode on" in features["summary"] and "lora" not in features["summary"]
    assert code == 0
    assert not [f for f in report["findings"] if re.search(r"\b(lora|sleep)", f["subject"].lower())]
    fired = {a["alert"]: a["can_fire"] for a in report["alerts"]}
    assert all(fired[name] for name in ("VLLMKVTransferFailures", "VLLMAdmissionRejections",
                                        "VLLMKVOffloadAllocationFailures", "VLLMSpecDecodeAcceptanceLow"))  # fmt: skip


def test_the_deployed_rules_are_loaded_healthy_and_the_same_as_this_render(healthy) -> None:
    _, report = healthy
    groups = report["rule_groups"]
    assert [g["group"] for g in groups] == [g["name"] for g in GROUPS]
    for g in groups:
        assert g["loaded"] and not g["errors"] and not g["differences"], g
        assert 0 <= g["evaluation_seconds"] < g["interval_seconds"] == EVALUATION_S
    assert report["backend"]["kind"] == "prometheus"
    assert all(c["available"] for c in report["backend"]["capabilities"].values())


def test_per_pod_pages_are_checked_for_one_pod_of_each_kind(fleet: Served, healthy) -> None:
    _, report = healthy
    triage = next(d for d in report["dashboards"] if any(s["name"] != "defaults" for s in d["samples"]))
    kinds = sorted(s["name"].split(" (", 1)[1] for s in triage["samples"] if s["name"] != "defaults")
    modes = {"pod": "pod", "exported": "exported_pod"}
    expected = {f"vLLM {generation(p)}, DCGM {modes[p.dcgm_mode]}=)" for p in fleet.summary.pods}
    assert kinds == sorted(expected) and len(expected) == 6  # 0.33, 0.11 and V0 in both DCGM label modes


def test_a_selector_that_matches_nothing_breaks_what_reads_it_and_the_advice_fixes_it(
    fleet: Served, tmp_path: Path
) -> None:
    config = {"selectors": {"vllm": 'job="vllm-engine"'}}
    code, report = oracle.doctor(
        fleet.prom.url, "--time", str(fleet.summary.end), config=config, tmp=tmp_path
    )
    assert code == 1
    assert {s for level, topic, s in oracle.findings(report, "alert")} == VLLM_ALERTS
    for level, _, subject in oracle.findings(report, "panel"):
        if level == "problem":
            # Broken by the selector, or by the $pod variable that lists no pods because of it.
            assert re.search(r'job="vllm-engine"|pod=~""', oracle.message(report, subject)), subject
    assert ("note", "source", "vLLM") in oracle.findings(report)
    assert {s for level, topic, s in oracle.findings(report, "rules")} == changed_groups(config)
    fixed = yaml.safe_load(report["advice"]["yaml"])
    assert fixed == {"selectors": {"vllm": 'job="vllm"'}}
    fixed_code, fixed_report = oracle.doctor(
        fleet.prom.url, "--time", str(fleet.summary.end), config=fixed, tmp=tmp_path
    )
    assert not oracle.findings(fixed_report, "alert")


def test_a_cluster_label_under_another_name_is_found_and_named(fleet: Served, tmp_path: Path) -> None:
    config = {"cluster_label": "k8s_cluster"}
    code, report = oracle.doctor(
        fleet.prom.url, "--time", str(fleet.summary.end), config=config, tmp=tmp_path
    )
    assert code == 1
    problems = {(t, s) for level, t, s in oracle.findings(report) if level == "problem"}
    assert problems == {("source", "cluster label")}
    assert "pods of the same name in different clusters are merged" in oracle.message(report, "cluster label")
    assert yaml.safe_load(report["advice"]["yaml"]) == {"cluster_label": "cluster"}
    notes = {(t, s) for level, t, s in oracle.findings(report) if level == "note"}
    assert ("variable", "vllm-pod-memory-planes / $cluster") in notes
    assert {s for t, s in notes if t == "rules"} == changed_groups(config)


def test_the_text_report_is_plain_without_a_terminal(fleet: Served) -> None:
    from typer.testing import CliRunner

    from obspack.cli import app

    result = CliRunner().invoke(app, ["doctor", "-p", fleet.prom.url, "--time", str(fleet.summary.end)])
    assert result.exit_code == 0, result.output
    assert "\x1b[" not in result.stdout
    for heading in (
        "Backend",
        "Sources",
        "Fit",
        "Deployed rules",
        # the five panels empty by design (no alert fires, no container stopped, no GPU idle or asleep), the
        # SLO page's young records, the cost page in GPU-hours until prices are set, and the gateway page's
        # errors and flow-control rejections (none on a healthy pool)
        "Notes (9)",
        "0 problems, 0 not checked, 9 notes (exit 0)",
    ):
        assert heading in result.stdout


def test_a_mimir_like_api_under_a_path_prefix_with_a_tenant(fleet: Served, healthy) -> None:
    from typer.testing import CliRunner

    from obspack.cli import app
    from tests.doctor.fakes import mimir_like, serve

    with serve(mimir_like(fleet.prom.url, tenant="team-a", token="s3cret")) as proxy:
        url = f"{proxy.url}/prometheus"
        args = ("--time", str(fleet.summary.end), "--bearer-token", "s3cret")
        code, report = oracle.doctor(url, *args, "--tenant", "team-a")
        asked = len(proxy.seen)
        refused = CliRunner().invoke(app, ["doctor", "-p", url, *args])
    assert all(r.headers.get("x-scope-orgid") == "team-a" for r in proxy.seen[:asked])
    assert refused.exit_code == 2 and "401 Unauthorized" in refused.output and "--tenant" in refused.output
    backend = report["backend"]
    assert backend["kind"] == "mimir"
    assert {name: c["available"] for name, c in backend["capabilities"].items()} == {
        "rules": True,
        "targets": False,
        "tsdb": False,
    }
    assert code == 0 and oracle.findings(report) == oracle.findings(healthy[1])


@pytest.mark.parametrize("image_regex", [".*llm-server.*", ""])  # a regex no image matches; off
def test_an_image_regex_that_picks_no_vllm_container_is_a_note_naming_the_containers(
    fleet: Served, healthy, tmp_path: Path, image_regex: str
) -> None:
    config = {"vllm_containers": {"image_regex": image_regex}}
    code, report = oracle.doctor(
        fleet.prom.url, "--time", str(fleet.summary.end), config=config, tmp=tmp_path
    )
    assert code == 0, "vLLM's own series still name their container"
    assert oracle.findings(report) == oracle.findings(healthy[1]) | {
        ("note", "source", "vLLM containers"),
        *(("note", "rules", g) for g in changed_groups(config)),
    }
    action = next(a for a in report["advice"]["actions"] if a.startswith("vllm_containers"))
    assert action.endswith("name_regex to one of: obspack-exporter, vllm")
    said = "is empty (off), and so it matches no container" if not image_regex else "'.*llm-server.*' matches no"
    assert said in oracle.message(report, "vLLM containers")
