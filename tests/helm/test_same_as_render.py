"""The chart renders what `obspack render` renders for the same settings, and the committed chart is fresh."""

from __future__ import annotations

import json
from typing import Any

import pytest

from obspack.config import ObspackConfig
from obspack.errors import RenderError
from obspack.pack import build
from obspack.pack.chart import build_chart, config_from_values, layout
from obspack.render.files import dashboard_configmap, prometheus_rule
from obspack.render.helm import chart_files
from obspack.render.write import diff
from obspack.rules.model import AlertRule, RuleGroup
from tests.helm.conftest import CHART, EVERYTHING, by_kind, load, merged_values, one


def _groups(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return one(docs, "PrometheusRule")["spec"]["groups"]


def test_values_defaults_are_obspack_defaults() -> None:
    assert config_from_values(merged_values()) == ObspackConfig()


def test_default_rules_equal_obspack_render(default_docs: list[dict[str, Any]]) -> None:
    # config_from_values validates like `obspack render --config` does (so 5 reads as 5.0, as Helm prints it).
    cfg = config_from_values(merged_values())
    assert _groups(default_docs) == prometheus_rule(build(cfg))["spec"]["groups"]


def test_changed_rules_equal_obspack_render(everything_docs: list[dict[str, Any]]) -> None:
    cfg = config_from_values(merged_values(load(EVERYTHING)))
    expected = prometheus_rule(build(cfg))["spec"]["groups"]
    assert _groups(everything_docs) == expected
    # the settings really moved: nothing here is a default any more
    rules = {r["alert"]: r for g in expected for r in g["rules"] if "alert" in r}
    assert "VLLMContainerRestarted" not in rules and "ObspackExporterTargetDown" not in rules
    assert "for" not in rules["VLLMGPUMemoryNearFull"] and rules["VLLMKVCacheUsageCritical"]["for"] == "1m30s"
    assert rules["VLLMHostMemoryNearLimit"]["labels"] == {
        "cluster_tier": "prod",
        "severity": "critical",
        "team": "ml-platform",
        "tier": "1",
    }
    assert (
        rules["VLLMTargetDown"]["annotations"]["runbook_url"]
        == "https://runbooks.example.com/obspack/vllm-target-down.md"
    )
    assert rules["VLLMTargetDown"]["annotations"]["dashboard_url"].startswith(
        "https://grafana.example.com/d/"
    )
    assert "> 4.0 *" in rules["VLLMRequestQueueBacklog"]["expr"]


def test_dashboards_equal_obspack_render(
    default_docs: list[dict[str, Any]], everything_docs: list[dict[str, Any]]
) -> None:
    # Dashboards are not templated: their JSON is the rendering of the config the chart was made from, and
    # only the ConfigMaps' metadata follows the values.
    defaults = build(config_from_values(merged_values()))
    for docs, values in ((default_docs, merged_values()), (everything_docs, merged_values(load(EVERYTHING)))):
        pack = build(config_from_values(values))
        rendered = {cm["metadata"]["name"].removeprefix("obspack-"): cm for cm in by_kind(docs, "ConfigMap")}
        assert len(rendered) == len(pack.dashboards)
        for dashboard in pack.dashboards:
            expected, got = dashboard_configmap(pack, dashboard), rendered[f"dashboard-{dashboard.name}"]
            assert got["metadata"]["annotations"] == expected["metadata"]["annotations"]
            assert (
                expected["metadata"]["labels"].items() - {("app.kubernetes.io/managed-by", "obspack")}
                <= got["metadata"]["labels"].items()
            )
            expected = dashboard_configmap(
                defaults, next(d for d in defaults.dashboards if d.name == dashboard.name)
            )
            (key, text), (expected_key, expected_text) = *got["data"].items(), *expected["data"].items()
            assert key == expected_key
            assert _model(text) == _model(expected_text), dashboard.name


def _model(text: str) -> dict[str, Any]:
    model = json.loads(text)
    model.pop("__generated")
    return model


def test_committed_chart_is_fresh() -> None:
    result = diff(CHART, chart_files(build_chart(ObspackConfig())))
    assert result.clean, (
        f"helm/obspack is stale (missing {result.missing}, stale {result.stale}, extra {result.extra}): "
        "run scripts/render-chart.sh or `obspack render --helm helm/obspack`"
    )


def test_values_yaml_alerts_come_from_the_config() -> None:
    values = load(CHART / "values.yaml")["alerts"]
    defaults = ObspackConfig().alerts.model_dump(by_alias=True, mode="json")
    for alert, settings in values.items():
        assert settings.items() <= defaults[alert].items(), alert


def test_a_chart_rendered_from_another_config_bakes_in_what_values_cannot_set() -> None:
    cfg = ObspackConfig.model_validate(
        {"cluster_label": "k8s_cluster", "alerts": {"VLLMTargetDown": {"job_regex": "serving-.*"}}}
    )
    files = chart_files(build_chart(cfg))
    assert "k8s_cluster" in files[layout.RULE_TEMPLATE]
    assert "serving-.*" in files[layout.RULE_TEMPLATE]
    comments = " ".join(line.lstrip("# ") for line in files["values.yaml"].splitlines() if line.startswith("#"))
    assert "VLLMTargetDown.job_regex: `serving-.*`" in comments


def _computing_alert_groups(cfg: ObspackConfig) -> tuple[RuleGroup, ...]:
    t = cfg.alerts.VLLMKVCacheUsageHigh
    rule = AlertRule(
        alert="VLLMKVCacheUsageHigh",
        expr=f"vllm:kv_cache_usage_perc < {1 - t.ratio}",  # computed: the chart cannot substitute this
        for_=t.for_,
        severity=t.severity,
        summary="s",
        description="d",
        runbook="r",
    )
    return (RuleGroup(name="g", rules=(rule,), interval=cfg.rule_interval),)


def test_an_alert_that_computes_with_a_setting_stops_the_chart(monkeypatch: pytest.MonkeyPatch) -> None:
    import obspack.pack.chart

    monkeypatch.setattr(obspack.pack.chart, "alert_groups", _computing_alert_groups)
    with pytest.raises(RenderError, match="depends on a chart setting beyond printing it"):
        chart_files(build_chart(ObspackConfig()))
