"""The config: defaults, the commented starter file, and every error path with FILE:LINE: key: message."""

import re
from pathlib import Path

import pytest
import yaml

from obspack.config import (
    ObspackConfig,
    Scope,
    Severity,
    annotated_defaults,
    conflicts,
    defaults,
    flat_dump,
    load_config,
)
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


@pytest.mark.parametrize("scope", [{}, {"scope": {"namespace_regex": "llm-.*", "cluster_regex": "prod"}}])
def test_the_defaults_built_without_validators_are_the_validated_defaults(scope: dict[str, object]) -> None:
    """`defaults()` (what a render without a config file reads) skips pydantic's validators: it equals the
    validated config, every nested default passes validation unchanged, and the model validator (the scope
    in the selectors) runs on it."""
    assert defaults() == ObspackConfig() == ObspackConfig.model_validate({})
    dumped = defaults().model_dump(by_alias=True, mode="json")
    assert ObspackConfig.model_validate(dumped) == defaults()
    assert defaults().model_fields_set == ObspackConfig().model_fields_set == set()
    if scope:
        constructed = ObspackConfig.model_construct(scope=Scope.model_validate(scope["scope"]))
        assert constructed._scope_in_selectors() == ObspackConfig.model_validate(scope)


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
    assert ":4: " in by_key["alerts.VLLMKVCacheUsageHigh.ratio"] and "0.999" in by_key["alerts.VLLMKVCacheUsageHigh.ratio"]
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
        ("common_labels:\n  'bad key': x\n", "common_labels.bad key", "label name"),
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



def test_sections_shared_through_aliases_and_merge_keys_load(tmp_path: Path) -> None:
    text = (
        "alerts:\n"
        "  VLLMKVCacheUsageHigh: &high {ratio: 0.8, for: 10m}\n"  # 2
        "  VLLMKVCacheFragmentationHigh: *high\n"  # 3
        "  VLLMRequestPreemptions:\n"  # 4
        "    <<: {for: 20m, labels: {team: ml}}\n"  # 5
        "    rate: 0.5\n"  # 6
    )
    cfg = load_config(write(tmp_path, text))
    assert (cfg.alerts.VLLMKVCacheFragmentationHigh.ratio, cfg.alerts.VLLMKVCacheFragmentationHigh.for_) == (0.8, "10m")
    assert cfg.alerts.VLLMRequestPreemptions.for_ == "20m" and cfg.alerts.VLLMRequestPreemptions.labels == {"team": "ml"}


def test_an_error_inside_an_alias_names_the_line_that_uses_it(tmp_path: Path) -> None:
    text = (
        "alerts:\n"
        "  VLLMKVCacheUsageHigh: &high {ratio: 0.8, for: 10m}\n"  # 2
        "selectors: *high\n"  # 3: the alert settings are no selectors
    )
    found = problems(tmp_path, text)
    name = tmp_path / "obspack.yaml"
    assert f"{name}:3: selectors.ratio: unknown key" in found[0] and f"{name}:3: selectors.for: unknown key" in found[1]


@pytest.mark.parametrize(
    "text",
    [
        "cluster_label: &a [*a]\n",  # an alias of itself
        "a: &a [x, x, x, x, x, x, x, x]\n" + "".join(f"a{i}: &a{i} [{', '.join(['*a' if i == 0 else f'*a{i - 1}'] * 8)}]\n" for i in range(40)),
        "cluster_label: " + "[" * 5000 + "]" * 5000 + "\n",  # deep enough to crash libyaml's composer
        "? [a, b]\n: c\n",  # a list as a key
        "1: c\n",  # a number as a key
    ],
    ids=["recursive alias", "billion laughs", "deep nesting", "list key", "number key"],
)
def test_hostile_yaml_gets_an_error_line_not_a_traceback(tmp_path: Path, text: str) -> None:
    found = problems(tmp_path, text)
    assert found and all(p.startswith(f"{tmp_path / 'obspack.yaml'}:") for p in found)


def test_numbers_in_exponent_form_are_numbers(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "alerts:\n  VLLMRequestPreemptions: {rate: 1e-3}\n"))
    assert cfg.alerts.VLLMRequestPreemptions.rate == 0.001


def test_the_e2e_demo_config_is_valid() -> None:
    from obspack.demo.stack import E2E_CONFIG

    cfg = ObspackConfig.model_validate(yaml.safe_load(E2E_CONFIG))
    assert cfg.scrape_interval == "5s" and conflicts(cfg) == []


def test_init_comments_say_the_allowed_range(tmp_path: Path) -> None:
    text = annotated_defaults()
    for key, allowed in [("for", "0 to 1d"), ("ratio", "0.001 to 0.999"), ("window", "2x scrape_interval"), ("lookback", "`for` + two rule evaluations"),
                         ("scrape_interval", "1s to 2m30s"), ("rule_interval", "1s to 5m"), ("refresh", "5s to 1d")]:
        lines = [line for line in text.splitlines() if line.strip().startswith(f"{key}:")]
        assert lines and all(allowed in line for line in lines if key != "ratio" or "hit rate" not in line), key


def test_rule_labels_cover_every_label_the_rules_group_or_join_by() -> None:
    """RULE_LABELS is what the cluster label and static labels may not be: it must follow the rules."""
    from obspack.config import RULE_LABELS
    from obspack.pack import build

    pack = build(ObspackConfig())
    used: set[str] = set()
    for group in pack.recording_groups + pack.alert_groups:
        for rule in group.rules:
            for names in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", rule.expr):
                used |= {n.strip() for n in names.split(",") if n.strip()}
            used |= set(re.findall(r'"(\w+)",\s*"\$1"', rule.expr))  # label_replace targets
            used |= set(dict(rule.labels))  # static labels of the rules themselves (slo, the burn windows)
    assert used - {"cluster"} <= RULE_LABELS, sorted(used - {"cluster"} - RULE_LABELS)


@pytest.mark.parametrize("config", ["defaults", "custom"])
def test_a_flat_dump_is_model_dump(config: str) -> None:
    from tests.support.packs import config_of

    cfg = config_of(config)
    for model in (cfg.selectors, cfg.prometheus_rule, cfg.grafana, cfg.scope):
        assert flat_dump(model) == model.model_dump(), type(model).__name__
    assert flat_dump(cfg.grafana)["tags"] is not cfg.grafana.tags
    with pytest.raises(TypeError):
        flat_dump(cfg)
