"""The Helm chart's generated files, made from the same config and alert functions as `obspack render`.

`chart_files(cfg)` returns the files of helm/obspack that obspack owns, keyed by their path in the chart:

    Chart.yaml                               name, version and appVersion (obspack's version)
    values.yaml                              every value with its default; `alerts:` comes from the config
    values.schema.json                       types, ranges and allowed keys of every value, from the same table
    templates/generated/_rules.tpl           the helpers the generated rule template calls
    templates/generated/prometheusrule.yaml  recording rules and alerts, with Helm values in place
    files/dashboards/<name>.json             the dashboards' JSON, as in `obspack render`'s grafana/ folder
    examples/sidecar-patch.yaml              adds the exporter as a sidecar to a vLLM Deployment

The hand-written templates (dashboard ConfigMaps, exporter Deployment, Service, monitors) sit beside them.

How values reach the rules, with no rule text kept twice: obspack builds the rule groups with a config in
which every setting the chart exposes holds a unique sentinel (thresholds such as 0.70013917, durations
such as 91001s, made-up runbook and Grafana URLs). In the rendered YAML each sentinel is replaced by the
Helm expression that prints the value the way Python would. Enabled flags, severity and labels are
structural: each alert is wrapped in `{{- if }}`, and its labels come from a helper that merges
`commonLabels`, the alert's labels and its severity. To prove nothing was missed the rules are rendered
with two different sentinel sets: both must give the same template, and no sentinel may survive. An alert
that computed with a setting (say `1 - ratio`) instead of printing it fails that check.

SLOs work the same way: `slos.enabled` and each SLO's `enabled` wrap its rules, each objective is a
sentinel printed where the rules print it, and each latency threshold is a sentinel inside the `le`
matcher, which a helper writes back in both spellings. The burn alert's windows, `for` and severity are
the window table's, not values.

Dashboards compute with thresholds (`ratio - 0.1`, `{ratio:.0%}`), so they are not templated: they show
the thresholds of the config the chart was rendered from. Settings of other types (regexes) are not
values either; both change by rendering the chart from one's own obspack.yaml.

The modules: layout (paths and the exporter's settings), settings (the alert settings exposed as values),
sentinels, rules (the PrometheusRule template), values (values.yaml and its schema), chart (the rest, and
`chart_files`).
"""

from obspack.render.helm.chart import chart_files, config_from_values
from obspack.render.helm.layout import RULE_TEMPLATE, SIDECAR_PATCH
from obspack.render.helm.values import values_schema

__all__ = [
    "RULE_TEMPLATE",
    "SIDECAR_PATCH",
    "chart_files",
    "config_from_values",
    "values_schema",
]
