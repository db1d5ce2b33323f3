"""The config: defaults, the commented starter file, and every error path with FILE:LINE: key: message."""

from pathlib import Path

import pytest
import yaml

from obspack.config import ObspackConfig, Severity, annotated_defaults, load_config
from obspack.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "obspack.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text))
    return err.value.problems


def test_defaults_follow_the_alert_catalogue() -> None:
    a = ObspackConfig().alerts
    assert (a.VLLMHostMemoryNearLimit.ratio, a.VLLMHostMemoryNearLimit.for_) == (0.9, "5m")
    assert a.VLLMContainerOOMKilled.severity is Severity.CRITICAL
    assert (a.VLLMGPUMemoryNearFull.ratio, a.VLLMKVCacheUsageHigh.ratio, a.VLLMKVCacheUsageCritical.ratio) == (
        0.97,
        0.9,
        0.95,
    )
    assert (a.VLLMKVCacheUsageCritical.for_, a.VLLMRequestPreemptions.for_) == ("2m", "15m")
    assert a.VLLMPrefixCacheHitRateLow.severity is Severity.INFO
    assert ObspackConfig().cluster_label == "cluster"


def test_no_file_and_empty_file_give_the_defaults(tmp_path: Path) -> None:
    assert load_config(None) == ObspackConfig()
    assert load_config(write(tmp_path, "")) == ObspackConfig()


def test_init_file_lists_every_setting_and_loads_to_the_defaults(tmp_path: Path) -> None:
    text = annotated_defaults()
    assert load_config(write(tmp_path, text)) == ObspackConfig()
    data = yaml.safe_load(text)
    assert set(data["alerts"]) == set(ObspackConfig.model_fields["alerts"].annotation.model_fields)
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#") and not line.rstrip().endswith(":"):
            assert "  # " in line, f"setting without an explanation: {line!r}"


def test_user_values_override_defaults(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "alerts:\n  VLLMKVCacheUsageHigh:\n    ratio: 0.8\n    for: 10m\n"))
    assert cfg.alerts.VLLMKVCacheUsageHigh.ratio == 0.8
    assert cfg.alerts.VLLMKVCacheUsageHigh.for_ == "10m"
    assert cfg.alerts.VLLMKVCacheUsageCritical.ratio == 0.95


def test_unknown_key_names_line_and_suggests(tmp_path: Path) -> None:
    found = problems(tmp_path, "cluster_label: cluster\nalerts:\n  VLLMKVCacheUsageHigh:\n    ratoi: 0.8\n")
    assert len(found) == 1
    assert found[0].startswith(f"{tmp_path / 'obspack.yaml'}:4: alerts.VLLMKVCacheUsageHigh.ratoi: unknown key")
    assert "did you mean 'ratio'?" in found[0]
    assert "allowed: enabled, for, labels, ratio, severity" in found[0]


def test_unknown_alert_name_suggests_the_right_one(tmp_path: Path) -> None:
    found = problems(tmp_path, "alerts:\n  VLLMKVCacheUsageHi: {ratio: 0.8}\n")
    assert ":2: alerts.VLLMKVCacheUsageHi: unknown key (did you mean 'VLLMKVCacheUsageHigh'?" in found[0]


def test_all_errors_reported_at_once_with_lines(tmp_path: Path) -> None:
    text = (
        "cluster_label: 'bad-label'\n"  # 1
        "alerts:\n"  # 2
        "  VLLMKVCacheUsageHigh:\n"  # 3
        "    ratio: 1.5\n"  # 4
        "    for: 5 minutes\n"  # 5
        "    severity: page\n"  # 6
    )
    found = problems(tmp_path, text)
    by_key = {p.split(": ")[1]: p for p in found}
    assert set(by_key) == {
        "cluster_label",
        "alerts.VLLMKVCacheUsageHigh.ratio",
        "alerts.VLLMKVCacheUsageHigh.for",
        "alerts.VLLMKVCacheUsageHigh.severity",
    }
    assert ":1: cluster_label:" in by_key["cluster_label"] and "[a-zA-Z_]" in by_key["cluster_label"]
    assert ":4: " in by_key["alerts.VLLMKVCacheUsageHigh.ratio"] and "1" in by_key["alerts.VLLMKVCacheUsageHigh.ratio"]
    assert ":5: " in by_key["alerts.VLLMKVCacheUsageHigh.for"] and "e.g. 30s, 5m" in by_key["alerts.VLLMKVCacheUsageHigh.for"]
    assert ":6: " in by_key["alerts.VLLMKVCacheUsageHigh.severity"]
    assert "'critical', 'warning' or 'info'" in by_key["alerts.VLLMKVCacheUsageHigh.severity"]


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ('selectors:\n  vllm: \'job="vllm"} or vector(1) or up{a="b"\'\n', "selectors.vllm", "label matchers"),
        ("selectors:\n  cadvisor: 'job=kubelet'\n", "selectors.cadvisor", "label matchers"),
        ('selectors:\n  dcgm: \'__name__="x"\'\n', "selectors.dcgm", "__name__"),
        ("vllm_containers:\n  image_regex: '(unclosed'\n", "vllm_containers.image_regex", "regular expression"),
        ("common_labels:\n  'bad key': x\n", "common_labels", "label name"),
        ("alerts:\n  VLLMTargetDown:\n    labels: {severity: page}\n", "alerts.VLLMTargetDown.labels", "severity"),
        ("prometheus_rule:\n  name: Not_A_Name\n", "prometheus_rule.name", "Kubernetes name"),
        ("alerts:\n  VLLMRequestQueueBacklog:\n    min_waiting: zero\n", "alerts.VLLMRequestQueueBacklog.min_waiting", "number"),
        ("slos:\n  availability: {objective: 1}\n", "slos.availability.objective", "less than 1"),
        ("slos:\n  period: 7d\n", "slos.period", "'30d' or '28d'"),
        ("slos:\n  speedup: 7\n", "slos.speedup", "allowed: 1, 2, 3"),
        ("slos:\n  models:\n    - model_regex: '(x'\n", "slos.models.0.model_regex", "regular expression"),
        ("slos:\n  min_requests: 0\n", "slos.min_requests", "greater than 0"),
        ("slos:\n  labels: {severity: page}\n", "slos.labels", "severity"),
    ],
)
def test_values_that_reach_promql_or_kubernetes_are_checked(tmp_path: Path, text: str, key: str, words: str) -> None:
    found = problems(tmp_path, text)
    assert len(found) == 1, found
    assert f": {key}: " in found[0]
    assert words in found[0]


def test_selectors_accept_braces_and_trailing_commas(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "selectors:\n  vllm: '{job=\"vllm\", namespace=~\"ml-.*\",}'\n"))
    assert cfg.selectors.vllm == 'job="vllm", namespace=~"ml-.*"'


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    found = problems(tmp_path, "alerts:\n  VLLMKVCacheUsageHigh: {ratio: 0.8\n")
    assert found[0].startswith(f"{tmp_path / 'obspack.yaml'}:")
    assert "not valid YAML" in found[0]


def test_not_a_mapping_and_duplicates_and_missing_file(tmp_path: Path) -> None:
    assert "must be a mapping" in problems(tmp_path, "- a\n- b\n")[0]
    dup = problems(tmp_path, "cluster_label: a\ncluster_label: b\n")
    assert dup == [f"{tmp_path / 'obspack.yaml'}:2: cluster_label: duplicate key"]
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "missing.yaml")
    assert "cannot read the config file" in str(err.value)
