"""The report's Problems lead with the root cause: consequences fold under it (an empty dashboard variable's
`instance=~""` under the cluster label that hides its values, a missing label under the source note that
explains it), every problem says what to do, and counts read in the right number. Findings built by hand,
so each rule is checked alone; tests/doctor/test_broken_fleets.py shows the same on a real Prometheus."""

from __future__ import annotations

from obspack.doctor.causes import JOIN_FIX, group
from obspack.doctor.checks import Check, State
from obspack.doctor.findings import Fix, Topic, counted, note, problem
from obspack.doctor.fit import JOINS_MATCH_NOTHING
from obspack.doctor.knowledge import DCGM_PROFILING_FIX
from obspack.doctor.needs import Leaf, Selector
from obspack.doctor.report import _cause_lines
from obspack.doctor.sources import SourceReport

FOUND = tuple(SourceReport(t, True, "") for t in ("vLLM", "cAdvisor", "kube-state-metrics", "dcgm-exporter"))
CLUSTER = note(
    Topic.SOURCE,
    "cluster label",
    "no `cluster` label, but `k8s_cluster` names 1 cluster: set cluster_label: k8s_cluster",
    fixes=(Fix(("cluster_label",), "k8s_cluster", "clusters here are told apart by k8s_cluster"),),
)


def check(metric: str, *matchers: tuple[str, str, str], **found: object) -> Check:
    return Check(Leaf(Selector(metric, matchers)), State.MISSING, "reason", **found)  # type: ignore[arg-type]


def empty_instance(panel: str) -> object:
    """A GPU panel empty because `$gpu_instance` listed nothing: its query holds `instance=~""`."""
    c = check("DCGM_FI_DEV_FB_USED", ("instance", "=~", ""), matcher=("instance", "=~", ""))
    return problem(Topic.PANEL, f"gpu-by-workload / {panel}", 'would be empty: instance=~"" never matches', causes=(c,))


def lines(causes: object) -> list[str]:
    return _cause_lines(causes, "problem")  # type: ignore[arg-type]


def test_empty_variables_fold_under_the_cluster_label_which_comes_first() -> None:
    variable = note(Topic.VARIABLE, "gpu-by-workload / $gpu_instance", "lists no values: Grafana puts an empty value")
    joins = problem(Topic.ALERT, "VLLMGPUMemoryNearFull", f"cannot fire: x: its rule returns no series ({JOINS_MATCH_NOTHING})")
    findings = [*(empty_instance(p) for p in ("Power", "Temperature", "SM activity")), joins, CLUSTER, variable]
    causes = group(findings, FOUND)
    assert lines(causes) == [
        "  problem cluster label: no `cluster` label, but `k8s_cluster` names 1 cluster: set cluster_label: k8s_cluster",
        "      so 1 alert cannot fire: VLLMGPUMemoryNearFull",
        "      so 3 panels would be empty: gpu-by-workload (3)",
        "      so 1 dashboard variable lists no values: gpu-by-workload / $gpu_instance",
        "      fix: set cluster_label: k8s_cluster in obspack.yaml (see Advice)",
    ]
    assert causes.stated == {CLUSTER, variable}  # shown with the cause, not again among the notes


def test_without_a_cluster_label_finding_an_empty_variable_is_a_cause_of_its_own() -> None:
    causes = group([empty_instance("Power")], FOUND)
    assert lines(causes) == [
        '  problem dashboard variables list no values, so their queries hold `instance=~""`, which matches only '
        "series without the label",
        "      so 1 panel would be empty: gpu-by-workload (1)",
        "      fix: see the notes on the variables that list no values: their query finds nothing on this server",
    ]


def test_a_missing_label_is_the_source_note_that_explains_it() -> None:
    cadvisor = note(
        Topic.SOURCE,
        "cAdvisor",
        "series carry no container label (some runtimes: cri-o, k3s, rke): per-container memory cannot be told apart",
        action="cAdvisor: check the kubelet's container runtime integration",
    )
    c = check("container_memory_working_set_bytes", ("container", "!=", ""), label="container")
    alert = problem(Topic.ALERT, "VLLMHostMemoryNearLimit", "cannot fire", causes=(c,))
    causes = group([alert, cadvisor], FOUND)
    assert lines(causes) == [
        "  problem cAdvisor: series carry no container label (some runtimes: cri-o, k3s, rke): per-container memory "
        "cannot be told apart",
        "      so 1 alert cannot fire: VLLMHostMemoryNearLimit",
        "      fix: check the kubelet's container runtime integration",
    ]
    assert cadvisor in causes.stated


def test_every_problem_has_a_fix_line() -> None:
    prof = problem(
        Topic.PANEL, "gpu-by-workload / SM activity per pod", "would be empty",
        causes=(check("DCGM_FI_PROF_SM_ACTIVE"),),
    )  # fmt: skip
    label = problem(Topic.ALERT, "VLLMZeroThroughput", "cannot fire", causes=(check("vllm:num_requests_running", label="pod"),))
    joins = problem(Topic.PANEL, "vllm-fleet / x", f"would be empty: r: ({JOINS_MATCH_NOTHING})")
    rules = problem(Topic.RULES, "rule groups", "none is loaded", action="rules: load generated/prometheus/*.yaml")
    shown = lines(group([prof, label, joins, rules], FOUND))
    heads = [i for i, line in enumerate(shown) if line.startswith("  problem ")]
    assert len(heads) == 4
    for start, end in zip(heads, [*heads[1:], len(shown)]):
        assert shown[end - 1].startswith("      fix: "), shown[start:end]
    assert f"      fix: {DCGM_PROFILING_FIX}" in shown
    assert f"      fix: {JOIN_FIX}" in shown
    assert "      fix: load generated/prometheus/*.yaml" in shown
    assert any("relabelling of vLLM's scrape" in line for line in shown)


def test_counts_read_in_the_right_number() -> None:
    assert [counted(n, "problem") for n in (0, 1, 2)] == ["0 problems", "1 problem", "2 problems"]
    assert counted(1, "more query", "more queries") == "1 more query"
    assert counted(3, "more query", "more queries") == "3 more queries"


def test_a_record_whose_join_matches_nothing_folds_under_the_cluster_label_not_beside_a_matcher() -> None:
    """The pod page's LeaderWorkerSet row: `record{pod} or (record and kube_pod_owner{owner_name=~"$pod"})`
    for a pod that leads no workers. The record's join fails on the cluster label; the owner matcher finds
    nothing too, but fixing the label fills the panel: it is under the label alone."""
    owner = check("kube_pod_owner", ("owner_name", "=~", "vllm-0"), matcher=("owner_name", "=~", "vllm-0"), seen=("lws",))
    panel = problem(
        Topic.PANEL,
        "vllm-pod-memory-planes / Leader and workers",
        f'would be empty: kube_pod_owner: owner_name=~"vllm-0" never matches; r: ({JOINS_MATCH_NOTHING})',
        causes=(owner,),
    )
    causes = group([panel, CLUSTER], FOUND)
    assert [c.key[0] for c in causes.causes] == ["cluster"] and causes.causes[0].consequences == (panel,)
    assert causes.alone == ()
    alone = group([panel], FOUND)  # without a cluster label finding, the matcher is the cause it names
    assert [c.key[0] for c in alone.causes] == ["matcher"]
