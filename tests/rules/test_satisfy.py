"""Label values for the shipped tests that the config's selectors accept (obspack/rules/satisfy.py)."""

from __future__ import annotations

import pytest

from obspack.pack.shipped_tests import satisfy


def test_accepts_decides_as_prometheus_does() -> None:
    m = satisfy.parse('namespace=~"inference-.*", pod!~"canary-.*", job="a\\"b", team!=""')
    assert satisfy.accepts("inference-x", [x for x in m if x[0] == "namespace"])
    assert not satisfy.accepts("my-inference-x", [x for x in m if x[0] == "namespace"]), "regexes are anchored"
    assert not satisfy.accepts("canary-1", [x for x in m if x[0] == "pod"])
    assert satisfy.accepts('a"b', [x for x in m if x[0] == "job"]), "escapes are read"
    assert not satisfy.accepts("", [x for x in m if x[0] == "team"]), "an absent label is the empty value"


@pytest.mark.parametrize(
    ("matchers", "preferred", "expected"),
    [
        ('ns=~"inference-.*"', "inference", "inference-inference"),
        ('pod=~"vllm-\\\\d+"', "llama-0", "vllm-0"),
        ('pod=~"(?i)LLAMA-.*"', "llama-0", "llama-0"),
        # a flag where the preferred value does not fit: made from the pattern (this raised AttributeError)
        ('model_name=~"(?i)llama.*"', "meta-llama/Llama-3.1-8B-Instruct", "llamameta-llama/Llama-3.1-8B-Instruct"),
        ('model_name=~"(?is)qwen.*"', "m", "qwenm"),
        ('ns!~"inference"', "inference", "inference-0"),
        ('ns="prod"', "inference", "prod"),
        ('ns=~"prod|staging"', "inference", "prod"),
    ],
)
def test_pick_keeps_the_value_readable(matchers: str, preferred: str, expected: str) -> None:
    assert satisfy.pick(satisfy.parse(matchers), preferred, set(), "test") == expected


def test_a_family_maps_the_same_everywhere_and_keeps_values_apart() -> None:
    constraints = satisfy.Constraints.of(
        "cluster", {"vllm": 'namespace=~"team-.*", pod=~"vllm-\\\\d+"', "dcgm": 'job="dcgm"'}
    )
    mapping = constraints.mapping([
        {"cluster": "prod-a", "namespace": "inference", "pod": "llama-0"},
        {"namespace": "gpu-operator", "exported_namespace": "inference", "exported_pod": "llama-1", "container": ""},
        {"namespace": "team-x", "pod": "vllm-0"},
    ])  # fmt: skip
    assert mapping.labels({"namespace": "inference", "pod": "llama-0"}) == {"namespace": "team-inference", "pod": "vllm-1"}
    assert mapping.value("exported_namespace", "inference") == "team-inference", "DCGM's name for the namespace"
    assert mapping.value("pod", "vllm-0") == "vllm-0", "a value already accepted stays"
    assert mapping.value("exported_pod", "llama-1") not in ("vllm-0", "vllm-1")
    assert mapping.value("container", "") == "", "an absent label stays absent"
    assert mapping.value("job", "anything") == "anything", "job is per source, never mapped across sources"


def test_per_source_labels_and_labels_a_series_lacks() -> None:
    constraints = satisfy.Constraints.of("cluster", {"ksm": 'job=~"kube-state-metrics|ksm"', "vllm": 'engine!=""'})
    assert constraints.source_labels("ksm", {"job": "kube-state-metrics"}) == {"job": "kube-state-metrics"}
    assert constraints.source_labels("ksm", {}) == {"job": "kube-state-metrics"}
    assert constraints.fill("vllm", {"pod": "a"}) == {"pod": "a", "engine": "x0"}
    assert constraints.fill("vllm", {"engine": "1"}) == {"engine": "1"}


def test_too_few_values_say_which_label_and_why() -> None:
    constraints = satisfy.Constraints.of("k8s_cluster", {"vllm": 'k8s_cluster="prod"'})
    with pytest.raises(satisfy.Unsatisfiable, match=r"label 'k8s_cluster': the selectors \(k8s_cluster=\"prod\"\) leave fewer than 2"):
        constraints.mapping([{"k8s_cluster": "prod-a"}, {"k8s_cluster": "prod-b"}])
    with pytest.raises(satisfy.Unsatisfiable, match="no value obspack can find"):
        satisfy.Constraints.of("cluster", {"vllm": 'job!~".*"'}).source_labels("vllm", {})


def test_one_cluster_drops_only_a_quiet_twin_in_another_cluster() -> None:
    from obspack.pack.shipped_tests.alerts import Incident

    def incident(alert_in: str) -> Incident:
        inc = Incident("pod p pages; its twin in the other cluster stays quiet")
        inc.add("m", {"k8s_cluster": "prod-a", "pod": "p"}, "1x5")
        inc.add("m", {"k8s_cluster": "prod-b", "pod": "p"}, "0x5")
        inc.add("kube_node_info", {"node": "n"}, "1x5", source="ksm")  # no cluster label: kept
        inc.expect("A", 5, [({"k8s_cluster": alert_in, "pod": "p"}, 1.0)])
        return inc

    one = incident("prod-a").in_one_cluster("k8s_cluster")
    assert one is not None and one.name.endswith(" (one cluster: the selectors leave no other)")
    assert [labels for _, _, labels, _, _ in one.series] == [{"k8s_cluster": "prod-a", "pod": "p"}, {"node": "n"}]
    assert one.checks == incident("prod-a").checks
    assert satisfy.Constraints.of("k8s_cluster", {"vllm": 'k8s_cluster="prod"'}).mapping(one.labelsets())
    # an alert expected in the second cluster would be lost with it: that test is left out instead
    assert incident("prod-b").in_one_cluster("k8s_cluster") is None


def test_a_quiet_twin_is_dropped_only_where_the_selectors_leave_one_cluster() -> None:
    """A namespace pinned, clusters free: the twin in the second cluster is what the rules read, so an
    incident needing two namespaces is not made to fit by dropping that cluster."""
    from obspack.config import ObspackConfig
    from obspack.pack.shipped_tests.alerts import Builder, Incident

    inc = Incident("twins")
    inc.add("m", {"cluster": "prod-a", "namespace": "inference", "pod": "p"}, "1x5")
    inc.add("m", {"cluster": "prod-b", "namespace": "other", "pod": "p"}, "0x5")
    inc.expect("A", 5, [({"cluster": "prod-a", "namespace": "inference", "pod": "p"}, 1.0)])
    pinned_namespace = Builder(ObspackConfig.model_validate({"selectors": {"vllm": 'namespace="inference"'}}))
    assert not pinned_namespace.one_cluster
    with pytest.raises(satisfy.Unsatisfiable, match="label 'namespace'"):
        pinned_namespace.fitted(inc)
    pinned_cluster = Builder(ObspackConfig.model_validate({"selectors": {"vllm": 'cluster="prod"'}}))
    assert pinned_cluster.one_cluster
    assert pinned_cluster.fitted(inc)[0].name == "twins (one cluster: the selectors leave no other)"
