"""The Helm writer: a complete chart's files from the chart's model (obspack.pack.chart: how the values
reach the rules through sentinel settings, and why dashboards are not templated).

`chart_files(chart)` returns the files, keyed by their path in the chart:

    Chart.yaml                               name, version and appVersion (obspack's version)
    values.yaml                              every value with its default; `alerts:` comes from the config
    values.schema.json                       types, ranges and allowed keys of every value, from the same table
    templates/generated/_rules.tpl           the helpers the generated rule template calls
    templates/generated/prometheusrule.yaml  recording rules and alerts, with Helm values in place
    templates/*.yaml, .helmignore            the hand-written templates (static/), under obspack's header
    files/dashboards/<name>.json             the dashboards' JSON, as in `obspack render`'s grafana/ folder
    examples/sidecar-patch.yaml              adds the exporter as a sidecar to a vLLM Deployment

The modules: rules (the PrometheusRule template), values (values.yaml and its schema), chart (the rest,
and `chart_files`).
"""

from obspack.render.helm.chart import chart_files
from obspack.render.helm.values import values_schema

__all__ = ["chart_files", "values_schema"]
