"""The whole config: sources, alerts, SLOs and outputs. `ObspackConfig()` is the built-in default pack, and
`defaults()` the same pack built without pydantic's validators.

The nested defaults (`alerts: Alerts = Alerts.model_construct()`) are built the same way: calling
`Alerts()` here would build the validators of 30 alert classes at every import, which a render without a
config file never uses. Neither way checks a default value (pydantic's validate_default is off), and only
ObspackConfig has a model validator, which `defaults()` runs too (tests/test_config.py: equal to
`ObspackConfig()`)."""

from __future__ import annotations

import copy
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, model_validator

from obspack.config.alerts import Alerts
from obspack.config.autoscaling import Autoscaling
from obspack.config.cost import Cost
from obspack.config.disaggregation import Disaggregation
from obspack.config.slos import SLOs
from obspack.config.values import (
    URL,
    K8sKey,
    K8sLabels,
    K8sName,
    LabelMap,
    LabelName,
    Matchers,
    Refresh,
    Regex,
    RuleInterval,
    ScrapeInterval,
    Tags,
    Text,
    _cluster_label,
    _Model,
    promql_string,
)
from obspack.promql import hide_strings

# ---------------------------------------------------------------------------------------------------------
# Sources


class Selectors(_Model):
    """Extra label matchers per source, without braces. Empty means: the metric names are enough."""

    vllm: Matchers = Field("", description="matchers for vLLM engine series, e.g. job=\"vllm\"")
    cadvisor: Matchers = Field(
        "", description="matchers for cAdvisor series, e.g. job=\"kubelet\", metrics_path=\"/metrics/cadvisor\""
    )
    kube_state_metrics: Matchers = Field("", description="matchers for kube-state-metrics, e.g. job=\"kube-state-metrics\"")
    dcgm: Matchers = Field("", description="matchers for NVIDIA dcgm-exporter series")
    exporter: Matchers = Field("", description="matchers for the obspack exporter's series")
    keda: Matchers = Field("", description="matchers for the KEDA operator's series, e.g. job=\"keda-operator\"")
    epp: Matchers = Field(
        "", description="matchers for the inference pool's endpoint picker (EPP) series, e.g. job=\"llm-d-router-epp\""
    )


class Scope(_Model):
    """The namespaces and clusters the pack watches, applied to every source (empty: all)."""

    namespace_regex: Regex = Field(
        "",
        description="namespaces whose workloads the pack watches, e.g. llm-.* (full match; DCGM's exported_namespace "
        "or pod_namespace where its series carry the workload there; empty: all)",
    )
    cluster_regex: Regex = Field(
        "", description="values of cluster_label the pack watches, e.g. prod-.* (full match; empty: all)"
    )


# The label each source carries a workload's namespace in. DCGM is left out: its label depends on how it is
# scraped (namespace, exported_namespace or pod_namespace), so its scope is set per label mode where its
# series are attributed to pods (obspack/rules/recording/dcgm.py: normalised).
NAMESPACE_LABELS = {
    "vllm": "namespace", "cadvisor": "namespace", "kube_state_metrics": "namespace", "exporter": "namespace",
    "epp": "namespace",
}  # fmt: skip


def scope_matcher(label: str, regex: str) -> str:
    """`label=~"regex"`, or nothing for an empty regex."""
    return f"{label}=~{promql_string(regex)}" if regex else ""


def scoped(selectors: Selectors, scope: Scope, cluster_label: str) -> Selectors:
    """The selectors with the scope's matchers in front of each source's own (those already there are not
    added again, so a config dumped and read back stays the same)."""
    updates = {}
    for source in Selectors.model_fields:
        own: str = getattr(selectors, source)
        wanted = [scope_matcher(NAMESPACE_LABELS[source], scope.namespace_regex)] if source in NAMESPACE_LABELS else []
        wanted.append(scope_matcher(cluster_label, scope.cluster_regex))
        hidden, restore = hide_strings(own)
        present = {restore(m).strip() for m in hidden.split(",")}
        added = [m for m in wanted if m and m not in present]
        if added:
            updates[source] = ", ".join([*added, own]) if own else ", ".join(added)
    return Selectors.model_validate({**selectors.model_dump(), **updates}) if updates else selectors


class VLLMContainers(_Model):
    """How a vLLM serving container is recognised in cAdvisor and kube-state-metrics series."""

    image_regex: Regex = Field(
        ".*vllm.*", description="container image (cAdvisor or kube-state-metrics) matches this (empty: off)"
    )
    name_regex: Regex = Field("", description="also count containers whose name matches this (empty: off)")


# ---------------------------------------------------------------------------------------------------------
# Outputs


class PrometheusRuleOutput(_Model):
    """The PrometheusRule manifest (kubernetes/prometheusrule.yaml)."""

    name: K8sName = Field("obspack", description="metadata.name of the PrometheusRule")
    namespace: K8sName = Field("monitoring", description="metadata.namespace of the PrometheusRule")
    labels: K8sLabels = Field(
        default_factory=lambda: {"release": "kube-prometheus-stack"},
        description="labels the Prometheus Operator's ruleSelector matches (Kubernetes labels, at most 32)",
    )


class GrafanaOutput(_Model):
    """Dashboards: the sidecar ConfigMaps, the datasource variable and links."""

    namespace: K8sName = Field("monitoring", description="namespace of the dashboard ConfigMaps")
    folder: Text = Field("vLLM", min_length=1, description="Grafana folder the dashboards go to (1 to 255 characters)")
    folder_annotation: K8sKey = Field(
        "k8s-sidecar-target-directory",
        description="ConfigMap annotation the Grafana sidecar reads the folder from (its folderAnnotation)",
    )
    configmap_labels: K8sLabels = Field(
        default_factory=lambda: {"grafana_dashboard": "1"},
        description="labels the Grafana sidecar looks for (sidecar.dashboards.label; Kubernetes labels, at most 32)",
    )
    datasource: Text = Field(
        "prometheus", description="default Prometheus datasource of the datasource variable (at most 255 characters)"
    )
    url: URL = Field("", description="Grafana base URL for links from alerts, e.g. https://grafana.example.com")
    tags: Tags = Field(
        default_factory=lambda: ["obspack", "vllm"], description="tags on every dashboard (at most 32, 50 characters each), besides `obspack`, by which each page lists the others"
    )
    refresh: Refresh = Field("30s", description="dashboard auto-refresh (empty: off; 5s to 1d)")
    multi_cluster: bool = Field(False, description="show the cluster picker (hidden for a single-cluster fleet)")


class ObspackConfig(_Model):
    """Everything `obspack render` needs. Every field has a default, so an empty file is valid."""

    cluster_label: Annotated[LabelName, AfterValidator(_cluster_label)] = Field(
        "cluster", description="label that tells clusters apart; kept by every by/on (not starting with __)"
    )
    scrape_interval: ScrapeInterval = Field(
        "30s",
        description="slowest scrape interval of the sources; every window must span two scrapes (1s to 2m30s)",
    )
    scope: Scope = Scope.model_construct()
    selectors: Selectors = Selectors.model_construct()
    vllm_containers: VLLMContainers = VLLMContainers.model_construct()
    alerts: Alerts = Alerts.model_construct()
    slos: SLOs = SLOs.model_construct()
    autoscaling: Autoscaling = Autoscaling.model_construct()
    cost: Cost = Cost.model_construct()
    disaggregation: Disaggregation = Disaggregation.model_construct()
    common_labels: LabelMap = Field(default_factory=dict, description="static labels added to every alert (as alerts.*.labels)")
    rule_interval: RuleInterval | None = Field(
        None, description="evaluation interval of the rule groups (unset: Prometheus' global one; 1s to 5m)"
    )
    runbook_base_url: URL = Field(
        "",
        description="prefix of runbook_url; unset gives runbooks/<alert>.md relative to the pack",
    )
    prometheus_rule: PrometheusRuleOutput = PrometheusRuleOutput.model_construct()
    grafana: GrafanaOutput = GrafanaOutput.model_construct()

    @model_validator(mode="after")
    def _scope_in_selectors(self) -> ObspackConfig:
        """Every reader of `selectors` (rules, dashboards, runbooks, tests, doctor, rightsize) gets the scope."""
        selectors = scoped(self.selectors, self.scope, self.cluster_label)
        if selectors is not self.selectors:
            object.__setattr__(self, "selectors", selectors)
        return self


def defaults() -> ObspackConfig:
    """The built-in default pack, equal to `ObspackConfig()`, without building pydantic's validators for
    the config's 50 models (about 0.1 s of a render that reads no config file)."""
    return ObspackConfig.model_construct()._scope_in_selectors()


def flat_dump(model: _Model) -> dict[str, object]:
    """A model whose fields hold no models (the selectors, an output's settings) as `model_dump()` gives
    it: field names to values, lists and mappings copied. Read off the model: the first `model_dump()` of
    a process builds the model's serialiser and imports pydantic's schema builder (about 40 ms)."""
    if any(isinstance(value, BaseModel) for _, value in model):
        raise TypeError(f"{type(model).__name__} holds models: use model_dump()")
    return copy.deepcopy(dict(model))
