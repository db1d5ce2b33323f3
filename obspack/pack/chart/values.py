"""The chart's values as one table: each value's default, JSON schema and one-line explanation, from the
config the chart is rendered from (alert and SLO settings, labels, URLs) and the chart's own settings (the
exporter, the monitors). The Helm writer prints values.yaml and values.schema.json from it; and the way
back, the config that renders what the chart renders with given values (`config_from_values`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import annotated_types
import yaml

from obspack import numbers, slos
from obspack.catalogue import vllm_latency
from obspack.config import (
    _DURATION,
    RULE_LABELS,
    Alerts,
    ObspackConfig,
    Severity,
)
from obspack.pack.chart.layout import (
    EXPORTER_IMAGE,
    EXPORTER_POD_SECURITY,
    EXPORTER_PORT,
    EXPORTER_RESOURCES,
    EXPORTER_SECURITY,
    SIDECAR_PATCH,
    SIDECAR_POD_LABEL,
    SIDECAR_PORT_NAME,
)
from obspack.pack.chart.settings import Setting, exposed_settings
from obspack.rules.alerts import all_alerts


@dataclass(frozen=True)
class V:
    """A value: its default, its JSON schema and a one-line explanation."""

    default: Any
    schema: dict[str, Any]
    doc: str = ""


@dataclass(frozen=True)
class S:
    """A section of values."""

    doc: str
    children: dict[str, V | S]


def _string(pattern: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "string", **({"pattern": pattern} if pattern else {}), **extra}


BOOL = {"type": "boolean"}
OBJECTIVE = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}

DURATION = _string(_DURATION.pattern, minLength=1)
OPTIONAL_DURATION = _string(f"^$|{_DURATION.pattern}")
K8S_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
NAMESPACE = _string(f"^$|{K8S_NAME}", maxLength=63)
NAMESPACES = {"type": "array", "items": _string(K8S_NAME, maxLength=63)}
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
OBJECT = {"type": "object"}
LIST = {"type": "array"}
# Printed into plain YAML scalars and JSON strings: no spaces, quotes or backslashes, no YAML indicator first.
URL = _string(r"""^$|^[A-Za-z0-9./][^\s"'\\]*$""")
ALERT_LABELS = {
    "type": "object",
    # label names not starting with __ (Go regexp has no lookahead) and not used by the rules
    "propertyNames": {
        "pattern": "^([a-zA-Z][a-zA-Z0-9_]*|_([a-zA-Z0-9][a-zA-Z0-9_]*)?)$",
        "not": {"enum": sorted(RULE_LABELS)},
    },
    "additionalProperties": {
        "type": "string",
        "minLength": 1,
        "maxLength": 1024,
        "not": {"pattern": "[{][{]|[}][}]"},
    },
}


def _setting_schema(setting: Setting) -> dict[str, Any]:
    info = setting.info
    if setting.kind == "bool":
        schema: dict[str, Any] = dict(BOOL)
    elif setting.kind == "severity":
        schema = {"type": "string", "enum": [s.value for s in Severity]}
    elif setting.kind == "labels":
        schema = dict(ALERT_LABELS)
    elif setting.kind == "duration":
        schema = dict(DURATION)
    else:
        schema = {"type": "number"}
        for limit in info.metadata:
            if isinstance(limit, annotated_types.Gt):
                schema["exclusiveMinimum"] = limit.gt
            elif isinstance(limit, annotated_types.Ge):
                schema["minimum"] = limit.ge
            elif isinstance(limit, annotated_types.Lt):
                schema["exclusiveMaximum"] = limit.lt
            elif isinstance(limit, annotated_types.Le):
                schema["maximum"] = limit.le
    return schema


def _plain(value: Any) -> Any:
    """A dumped setting without its empty sections, numbers tidy (20, not 20.0)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v != {}}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        value = numbers.tidy(value)
        return int(value) if value.is_integer() and abs(value) < 1e15 else value
    return value


def _flow(value: Any) -> str:
    """A setting as the user writes it in obspack.yaml, on one line (YAML flow style) in backquotes:
    `30d`, `null`, `[{model_regex: meta-llama/.*, time_to_first_token: {threshold: 5}}]`."""
    text = yaml.safe_dump(_plain(value), default_flow_style=True, width=1 << 20, allow_unicode=True, sort_keys=False)
    return f"`{text.strip().removesuffix('...').strip()}`"


def _alerts_section(cfg: ObspackConfig) -> S:
    summaries = {a.alert: a.summary for a in all_alerts(cfg)}
    dumped = cfg.alerts.model_dump(by_alias=True, mode="json")
    children: dict[str, V | S] = {}
    fixed = []
    for alert in Alerts.model_fields:
        settings: dict[str, V | S] = {}
        for s in exposed_settings():
            if s.alert != alert:
                continue
            if s.kind == "fixed":
                fixed.append(f"{alert}.{s.key}: {_flow(dumped[alert][s.key])}")
            else:
                settings[s.key] = V(dumped[alert][s.key], _setting_schema(s), s.info.description or "")
        children[alert] = S(summaries.get(alert, ""), settings)
    doc = (
        "One entry per alert, with the keys of `alerts:` in obspack.yaml. Numbers need a values file or "
        "--set-json (--set passes them as strings)."
    )
    if fixed:
        doc += (
            " Fixed when the chart was rendered (to change them, render the chart from your obspack.yaml with "
            f"`obspack render --config obspack.yaml --helm <chart>`): {', '.join(fixed)}."
        )
    return S(doc, children)


def _slos_section(cfg: ObspackConfig) -> S:
    """slos: the switches, objectives and latency thresholds; the rest is baked in from the config."""
    children: dict[str, V | S] = {
        "enabled": V(cfg.slos.enabled, BOOL, "the SLO rules and VLLMErrorBudgetBurn")
    }
    for sli in slos.SLIS:
        current = getattr(cfg.slos, sli)
        settings: dict[str, V | S] = {
            "enabled": V(current.enabled, BOOL),
            "objective": V(current.objective, OBJECTIVE, "share of good events, below 1"),
        }
        if "threshold" in type(current).model_fields:
            metrics = vllm_latency.SLO_HISTOGRAMS[sli]
            bounds = [int(b) if b.is_integer() else b for b in vllm_latency.boundaries(metrics)]
            settings["threshold"] = V(
                current.threshold, {"type": "number", "enum": bounds}, "seconds; a bucket bound vLLM exports"
            )
        children[sli] = S(type(current).__doc__ or "", settings)
    children["labels"] = V(dict(cfg.slos.labels), ALERT_LABELS, "extra labels on VLLMErrorBudgetBurn")
    dumped = cfg.slos.model_dump(mode="json", by_alias=True, exclude_none=True)
    fixed = "; ".join(
        f"{key}: {_flow(dumped.get(key))}" for key in ("period", "min_requests", "models", "speedup")
    )
    return S(
        "Per-model SLOs and their burn-rate alert (docs/slos.md). Fixed when the chart was rendered (render "
        f"it from your obspack.yaml to change them): {fixed}; availability.handler_regex: "
        f"{_flow(cfg.slos.availability.handler_regex)}.",
        children,
    )


def values_table(cfg: ObspackConfig) -> dict[str, V | S]:
    g = cfg.grafana
    return {
        "alerts": _alerts_section(cfg),
        "slos": _slos_section(cfg),
        "commonLabels": V(
            dict(cfg.common_labels),
            ALERT_LABELS,
            "static labels on every alert, e.g. team: ml-platform for routing",
        ),
        "runbookBaseURL": V(
            cfg.runbook_base_url,
            URL,
            "prefix of each alert's runbook_url; empty: runbooks/<alert>.md (relative)",
        ),
        "grafanaURL": V(g.url, URL, "Grafana base URL for the dashboard_url annotation of alerts"),
        "ruleInterval": V(
            cfg.rule_interval or "",
            OPTIONAL_DURATION,
            "evaluation interval of the rule groups; empty: global",
        ),
        "monitoringLabels": V(
            dict(cfg.prometheus_rule.labels),
            STRING_MAP,
            "labels on the PrometheusRule, ServiceMonitors and PodMonitors; kube-prometheus-stack selects "
            "them by `release: <its release name>`",
        ),
        "prometheusRule": S(
            "The PrometheusRule with obspack's recording rules and alerts.",
            {
                "enabled": V(True, BOOL),
                "namespace": V("", NAMESPACE, "empty: the release namespace"),
                "labels": V({}, STRING_MAP, "more labels, on the PrometheusRule only"),
                "annotations": V({}, STRING_MAP),
            },
        ),
        "dashboards": S(
            "One ConfigMap per Grafana dashboard, for the Grafana dashboard sidecar.",
            {
                "enabled": V(True, BOOL),
                "namespace": V("", NAMESPACE, "empty: the release namespace"),
                "labels": V(
                    dict(g.configmap_labels),
                    STRING_MAP,
                    "labels the sidecar looks for (sidecar.dashboards.label)",
                ),
                "folder": V(g.folder, _string(), "Grafana folder of the dashboards"),
                "folderAnnotation": V(
                    g.folder_annotation,
                    _string(),
                    "annotation the sidecar reads the folder from (sidecar.dashboards.folderAnnotation); "
                    "empty: no folder annotation",
                ),
            },
        ),
        "exporter": _exporter_section(),
        "sidecar": S(
            "The exporter as a sidecar of each vLLM pod: patch your vLLM Deployment with "
            f"{SIDECAR_PATCH} (see docs/helm.md), then enable this PodMonitor.",
            {
                "podMonitor": S(
                    "Scrapes the sidecars.",
                    {
                        "enabled": V(False, BOOL),
                        "namespace": V(
                            "", NAMESPACE, "where the PodMonitor lives; empty: the release namespace"
                        ),
                        "namespaces": V([], NAMESPACES, "namespaces of the vLLM pods; empty: all"),
                        "selector": V(
                            {"matchLabels": dict(SIDECAR_POD_LABEL)},
                            OBJECT,
                            "pods with the sidecar (the patch labels them)",
                        ),
                        "port": V(
                            SIDECAR_PORT_NAME, _string(K8S_NAME, maxLength=15), "the sidecar's port name"
                        ),
                        "interval": V("30s", DURATION),
                        "scrapeTimeout": V("10s", DURATION),
                        "labels": V({}, STRING_MAP, "more labels, on this PodMonitor only"),
                    },
                ),
            },
        ),
        "autoscaling": S(
            "The KEDA ScaledObjects and HPAs of the config's autoscaling.autoscalers (files/autoscaling/): off "
            "until you turn them on, since they scale workloads. They need KEDA, or prometheus-adapter serving "
            "the rules in the pack's kubernetes/autoscaling/prometheus-adapter-rules.yaml.",
            {"enabled": V(False, BOOL, "install the autoscalers rendered from obspack.yaml")},
        ),
        "vllmMonitor": S(
            "A PodMonitor or ServiceMonitor for vLLM itself, for clusters that do not scrape it yet.",
            {
                "enabled": V(False, BOOL),
                "kind": V("PodMonitor", {"type": "string", "enum": ["PodMonitor", "ServiceMonitor"]}),
                "namespace": V("", NAMESPACE, "where the monitor lives; empty: the release namespace"),
                "namespaces": V([], NAMESPACES, "namespaces of the vLLM pods; empty: all"),
                "selector": V(
                    {}, OBJECT, "required: labels of the vLLM pods (PodMonitor) or Services (ServiceMonitor)"
                ),
                "port": V("http", _string(K8S_NAME, maxLength=15), "name of the port that serves /metrics"),
                "path": V("/metrics", _string("^/")),
                "interval": V("15s", DURATION),
                "scrapeTimeout": V("10s", DURATION),
                "labels": V({}, STRING_MAP, "more labels, on this monitor only"),
            },
        ),
    }


def _exporter_section() -> S:
    return S(
        "The obspack exporter as a Deployment that scrapes the listed vLLM targets (one pod; each target's "
        "series carry a `target` label). For per-pod series, run it as a sidecar instead (see `sidecar`).",
        {
            "enabled": V(False, BOOL),
            "targets": V(
                [],
                {"type": "array", "items": _string(r"^https?://[^\s/]+")},
                "vLLM metrics URLs, one per vLLM server (not a load-balanced Service), "
                "e.g. http://vllm-0.vllm.llm.svc:8000/metrics",
            ),
            "image": S(
                "Built from Dockerfile.exporter; its tag defaults to the chart's appVersion.",
                {
                    "repository": V(EXPORTER_IMAGE, _string()),
                    "tag": V("", _string()),
                    "pullPolicy": V(
                        "IfNotPresent", {"type": "string", "enum": ["Always", "IfNotPresent", "Never"]}
                    ),
                },
            ),
            "imagePullSecrets": V([], LIST, "e.g. [{name: regcred}]"),
            "port": V(EXPORTER_PORT, {"type": "integer", "minimum": 1, "maximum": 65535}),
            "listenHost": V("0.0.0.0", _string(), "address to listen on; :: for IPv6"),
            "window": V("5m", DURATION, "window of the exporter's prefix-cache hit ratio"),
            "timeout": V("2s", DURATION, "deadline of each target scrape"),
            "maxBytes": V(
                "32MiB", _string(r"^[0-9]+ *(B|KiB|MiB|GiB|KB|MB|GB)?$"), "largest target payload accepted"
            ),
            "logLevel": V("INFO", {"type": "string", "enum": ["DEBUG", "INFO", "WARNING", "ERROR"]}),
            "extraArgs": V([], {"type": "array", "items": {"type": "string"}}),
            "resources": V(EXPORTER_RESOURCES, OBJECT),
            "podSecurityContext": V(EXPORTER_POD_SECURITY, OBJECT),
            "securityContext": V(EXPORTER_SECURITY, OBJECT),
            "serviceAccount": S(
                "The exporter needs no Kubernetes API access: its token is not mounted and no RBAC is created.",
                {
                    "create": V(True, BOOL),
                    "name": V("", _string(), "empty: the exporter's full name"),
                },
            ),
            "podLabels": V({}, STRING_MAP),
            "podAnnotations": V({}, STRING_MAP),
            "priorityClassName": V("", _string()),
            "nodeSelector": V({}, STRING_MAP),
            "tolerations": V([], LIST),
            "affinity": V({}, OBJECT),
            "serviceMonitor": S(
                "Scrapes the exporter Deployment.",
                {
                    "enabled": V(True, BOOL),
                    "interval": V("30s", DURATION),
                    "scrapeTimeout": V("10s", DURATION),
                    "labels": V({}, STRING_MAP, "more labels, on this ServiceMonitor only"),
                },
            ),
        },
    )


def config_from_values(values: dict[str, Any], base: ObspackConfig | None = None) -> ObspackConfig:
    """The obspack config that renders what the chart renders with these (complete, merged) values.

    Settings the chart does not expose (selectors, cluster label, dashboard datasource, ...) come from
    `base`, the config the chart was generated from.
    """
    data = (base or ObspackConfig()).model_dump(by_alias=True, mode="json")
    dashboards = values["dashboards"]
    alerts = {
        name: {**settings, **values["alerts"].get(name, {})} for name, settings in data["alerts"].items()
    }
    chart_slos = values["slos"]
    data["slos"].update(enabled=chart_slos["enabled"], labels=chart_slos["labels"])
    for sli in slos.SLIS:
        data["slos"][sli].update(chart_slos[sli])
    data.update(
        alerts=alerts,
        common_labels=values["commonLabels"],
        runbook_base_url=values["runbookBaseURL"],
        rule_interval=values["ruleInterval"] or None,
    )
    data["prometheus_rule"]["labels"] = {**values["monitoringLabels"], **values["prometheusRule"]["labels"]}
    data["grafana"].update(
        url=values["grafanaURL"],
        folder=dashboards["folder"],
        folder_annotation=dashboards["folderAnnotation"],
        configmap_labels=dashboards["labels"],
    )
    return ObspackConfig.model_validate(data)
