"""The pack: everything `obspack render` writes and `obspack doctor` checks, as data built once from the
config. Writers and readers of live servers take a Pack and never the config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from obspack.pack.autoscaling import Manifests
from obspack.rules.model import AlertRule, RuleGroup


@dataclass(frozen=True)
class Dashboard:
    name: str  # file name without .json
    title: str
    uid: str
    model: dict[str, object]


@dataclass(frozen=True)
class Sources:
    """How the pack finds its sources, for what reads a live server: the config's selectors per source
    (`vllm`, `cadvisor`, `kube_state_metrics`, `dcgm`, `exporter`; empty: the metric names are enough) and
    how a vLLM container is recognised."""

    selectors: Mapping[str, str]
    image_regex: str
    name_regex: str


@dataclass(frozen=True)
class Price:
    """A price of a GPU-hour: for GPU models `model_regex` matches (a space also matches a dash), in clusters
    `cluster_regex` matches, on node pools `node_pool_regex` matches (empty: any)."""

    model_regex: str
    hourly: float
    cluster_regex: str = ""
    node_pool_regex: str = ""


@dataclass(frozen=True)
class Costs:
    """How the pack prices GPUs, for what reads a live server (the doctor's check of GPU models in use with
    no price): `config` prices (first match wins, then `default_hourly`), `opencost`'s per-node price, or
    none (`gpu_hours`: every GPU-hour counts 1). `node_pool_label` is kube-state-metrics' label naming the
    pool (empty: none); `in_use` a query of the GPUs vLLM pods hold per cluster, node and GPU model, from raw
    series."""

    source: str  # config, opencost or gpu_hours
    currency: str
    prices: tuple[Price, ...] = ()
    default_hourly: float | None = None
    node_pool_label: str = ""
    opencost_selector: str = ""
    in_use: str = ""


@dataclass(frozen=True)
class Pack:
    version: str
    source: str  # what the pack was rendered from, for the generated headers (build.stamp)
    cluster_label: str  # the label every aggregation keeps (engine writers reason about it)
    sources: Sources
    recording_groups: tuple[RuleGroup, ...]
    alert_groups: tuple[RuleGroup, ...]
    alerts: tuple[AlertRule, ...]  # the enabled alerts (one rule each; several for the burn alert)
    dashboards: tuple[Dashboard, ...]
    runbooks: tuple[tuple[str, str], ...]  # (slug, markdown)
    rule_tests: tuple[tuple[str, dict[str, object]], ...]  # (file name, promtool test file)
    missing_tests: tuple[str, ...]  # enabled alerts or SLOs without a shipped test, and why
    alertmanager: dict[str, object]
    prometheus_rule: dict[str, object]  # name, namespace, labels
    grafana: dict[str, object]  # namespace, folder, folder_annotation, configmap_labels
    autoscaling: Manifests = field(default_factory=lambda: Manifests((), ()))  # KEDA and HPA manifests
    costs: Costs = field(default_factory=lambda: Costs("gpu_hours", "GPU-hours"))  # how GPUs are priced
