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
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

import annotated_types
import yaml
from pydantic.fields import FieldInfo

from obspack import __version__, slos
from obspack.catalogue import vllm_latency
from obspack.config import (
    _DURATION,
    RULE_LABELS,
    Alerts,
    Duration,
    LabelMap,
    ObspackConfig,
    Severity,
    Window,
    has_type,
)
from obspack.conventions import GROUP_PREFIX
from obspack.dashboards import all_dashboards
from obspack.errors import RenderError
from obspack.render import yamlfmt
from obspack.render.bundle import Dashboard, Pack
from obspack.render.files import MARKER, dashboard_json
from obspack.rules.alerts import alert_groups, all_alerts, runbook_url
from obspack.rules.alerts.slo import ALERT as BURN
from obspack.rules.model import AlertRule, RecordingRule
from obspack.rules.recording import all_recording_groups
from obspack.rules.recording.slo import le_matcher

RULE_TEMPLATE = "templates/generated/prometheusrule.yaml"
DASHBOARD_DIR = "files/dashboards"
HELPERS_TEMPLATE = "templates/generated/_rules.tpl"
SIDECAR_PATCH = "examples/sidecar-patch.yaml"
CHART_SOURCE = "the obspack Helm chart"

# The exporter, as the Deployment and the sidecar patch both run it. values.yaml's defaults and the patch
# are written from these, so the two cannot drift apart.
EXPORTER_IMAGE = "ghcr.io/obspack/obspack-exporter"
EXPORTER_PORT = 9400
SIDECAR_PORT_NAME = "obspack-metrics"  # port names are at most 15 characters
SIDECAR_POD_LABEL = {"obspack-exporter": "sidecar"}  # the patch adds it; the PodMonitor selects it
PROBE_DIR = "/var/run/obspack-probe"
RUN_AS = 65532  # the conventional "nonroot" uid/gid of distroless images
EXPORTER_RESOURCES = {
    "requests": {"cpu": "20m", "memory": "96Mi"},
    "limits": {"cpu": "500m", "memory": "256Mi"},
}
EXPORTER_POD_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": RUN_AS,
    "runAsGroup": RUN_AS,
    "fsGroup": RUN_AS,
    "seccompProfile": {"type": "RuntimeDefault"},
}
EXPORTER_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": RUN_AS,
    "runAsGroup": RUN_AS,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "privileged": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def chart_files(cfg: ObspackConfig) -> dict[str, str]:
    """Every generated file of the chart, keyed by its POSIX path relative to the chart root, sorted."""
    files = {
        "Chart.yaml": chart_yaml(),
        "values.yaml": values_yaml(cfg),
        "values.schema.json": json.dumps(values_schema(cfg), indent=2) + "\n",
        HELPERS_TEMPLATE: _helpers_tpl(),
        RULE_TEMPLATE: _checked_rule_template(cfg),
        SIDECAR_PATCH: sidecar_patch(),
    }
    pack = chart_pack(cfg)
    for d in pack.dashboards:
        files[f"{DASHBOARD_DIR}/{d.name}.json"] = dashboard_json(pack, d)
    return dict(sorted(files.items()))


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


def _generated_comment() -> str:
    return f"{MARKER} {__version__}. Do not edit: run `obspack render --helm helm/obspack`."


# ---------------------------------------------------------------------------------------------------------
# The alert settings the chart exposes, read from the per-alert settings classes in obspack/config.py


@dataclass(frozen=True)
class _Setting:
    alert: str  # key under `alerts`
    name: str  # pydantic field name (for_)
    key: str  # key in values.yaml and obspack.yaml (for)
    kind: str  # bool, severity, labels, duration, float, or fixed (not a value: baked in from the config)
    info: FieldInfo

    @property
    def value_path(self) -> str:
        return f"$.Values.alerts.{self.alert}.{self.key}"


def _kind(name: str, info: FieldInfo) -> str:
    # enabled, severity and labels are templated structurally (see _alert_block); a new setting of one of
    # those types would need templating of its own, so it is fixed, like regexes and other text.
    if name == "enabled" and info.annotation is bool:
        return "bool"
    if name == "severity" and info.annotation is Severity:
        return "severity"
    if name == "labels" and has_type(info, LabelMap):
        return "labels"
    if has_type(info, Duration) or has_type(info, Window):
        return "duration"
    if info.annotation is float:
        return "float"
    return "fixed"  # baked into the chart from the config it is rendered from


def _settings() -> list[_Setting]:
    out = []
    for alert, alert_field in Alerts.model_fields.items():
        for name, info in alert_field.annotation.model_fields.items():  # type: ignore[union-attr]
            out.append(_Setting(alert, name, info.alias or name, _kind(name, info), info))
    return out


def _zero_durations() -> tuple[str, ...]:
    """The `for` values obspack leaves out of a rule, asked of the rule model itself."""
    probe = {
        "alert": "A",
        "expr": "1",
        "severity": Severity.INFO,
        "summary": "",
        "description": "",
        "runbook": "",
    }
    candidates = ("0ms", "0s", "0m", "0h", "0d", "0w", "0y")
    return tuple(d for d in candidates if "for" not in AlertRule(**probe, for_=d).to_dict())


# ---------------------------------------------------------------------------------------------------------
# Sentinel rendering


@dataclass
class _Sentinels:
    """One set of sentinel values and, for each, the Helm expression that replaces it in the text."""

    index: int  # 0 or 1: two sets, to prove the templates do not depend on which one was used
    replace: dict[str, str] = field(default_factory=dict)  # sentinel text -> Helm expression
    for_lines: dict[str, str] = field(default_factory=dict)  # `for` sentinel -> alert
    interval: str = ""
    runbook_base: str = ""
    grafana_url: str = ""

    LEFTOVER = re.compile(r"0\.[67]\d{3}39|\b9\d{4}s\b|obspack-sentinel|__OBSPACK_")

    @classmethod
    def make(cls, index: int) -> _Sentinels:
        s = cls(index=index)
        s.interval = f"{99000 + index}s"
        s.runbook_base = f"https://runbooks.obspack-sentinel-{index}.invalid/base"
        s.grafana_url = f"https://grafana.obspack-sentinel-{index}.invalid"
        s.replace[f"{s.runbook_base}/"] = "{{ $runbookBase }}"
        s.replace[s.grafana_url] = "{{ $grafanaURL }}"
        return s

    def value(self, i: int, setting: _Setting) -> Any:
        """The sentinel for the i-th setting (i < 1000); records its replacement."""
        if setting.kind == "duration":
            text = f"{91000 + 1000 * self.index + i}s"
            self.replace[text] = f"{{{{ {setting.value_path} }}}}"
            if setting.key == "for":
                self.for_lines[text] = setting.alert
            return text
        if setting.kind == "float":
            text = f"0.{7 - self.index}{i:03d}3917"
            number = float(text)
            short = format(number, "g")
            assert str(number) == text and short != text
            self.replace[text] = f'{{{{ include "obspack.float" {setting.value_path} }}}}'
            self.replace[short] = f'{{{{ include "obspack.floatG" {setting.value_path} }}}}'
            return number
        raise AssertionError(setting.kind)

    def config(self, cfg: ObspackConfig) -> ObspackConfig:
        """`cfg` with every exposed setting replaced by a sentinel and every alert enabled."""
        updates: dict[str, Any] = {}
        settings = _settings()
        for alert in Alerts.model_fields:
            current = getattr(cfg.alerts, alert)
            update: dict[str, Any] = {
                "enabled": True,
                "severity": (Severity.WARNING, Severity.CRITICAL)[self.index],
                "labels": ({}, {"obspack_sentinel_label": "b"})[self.index],
            }
            for i, setting in enumerate(settings, start=1):
                if setting.alert == alert and setting.kind in ("duration", "float"):
                    update[setting.name] = self.value(i, setting)
            updates[alert] = current.model_copy(update=update)
        return self.slo_config(
            cfg.model_copy(
                update={
                    "alerts": cfg.alerts.model_copy(update=updates),
                    "common_labels": ({}, {"obspack_sentinel_common": "b"})[self.index],
                    "rule_interval": self.interval,
                    "runbook_base_url": self.runbook_base,
                    "grafana": cfg.grafana.model_copy(update={"url": self.grafana_url}),
                }
            )
        )

    def slo_value(self, i: int, sli: str, key: str) -> float:
        """The sentinel of an SLO's objective or threshold; records its replacement."""
        path = f"$.Values.slos.{sli}.{key}"
        number = float(f"0.{7 - self.index}{900 + i:03d}3917")
        if key == "threshold":
            self.replace[le_matcher(number)] = f'{{{{ include "obspack.le" {path} }}}}'
        else:
            self.replace[repr(number)] = f'{{{{ include "obspack.float" {path} }}}}'
        return number

    def slo_config(self, cfg: ObspackConfig) -> ObspackConfig:
        """`cfg` with every SLO on and its objectives and thresholds replaced by sentinels."""
        updates: dict[str, Any] = {"enabled": True, "labels": ({}, {"obspack_sentinel_slo": "b"})[self.index]}
        for i, sli in enumerate(slos.SLIS):
            current = getattr(cfg.slos, sli)
            update: dict[str, Any] = {"enabled": True, "objective": self.slo_value(2 * i, sli, "objective")}
            if "threshold" in type(current).model_fields:
                update["threshold"] = self.slo_value(2 * i + 1, sli, "threshold")
            updates[sli] = current.model_copy(update=update)
        return cfg.model_copy(update={"slos": cfg.slos.model_copy(update=updates)})

    def substitute(self, text: str) -> str:
        for sentinel in sorted(self.replace, key=len, reverse=True):
            text = text.replace(sentinel, self.replace[sentinel])
        return text


def _escape(text: str) -> str:
    """Make obspack's own `{{ ... }}` (alert templates, Grafana legends) literal text for Helm."""
    return text.replace("{{", '{{ "{{" }}')


_FOR_LINE = re.compile(r"^(?P<pad> *)for: (?P<value>\S+)$", re.MULTILINE)
_LABELS_LINE = re.compile(r"^(?P<pad> *)labels: __OBSPACK_LABELS_(?P<alert>\w+)__$", re.MULTILINE)


def _indent(text: str, pad: str) -> list[str]:
    return [pad + line for line in text.splitlines()]


def _burn_block(rule: AlertRule, pad: str) -> list[str]:
    """A VLLMErrorBudgetBurn rule: its window pair's labels, `for` and severity are fixed; commonLabels and
    slos.labels come from the values through a helper."""
    data = rule.to_dict()
    fixed = {**dict(rule.labels), "severity": rule.severity.value}
    pair = " ".join(json.dumps(f"{k}={fixed[k]}") for k in ("severity", "long", "short"))
    data["labels"] = "__OBSPACK_BURN_LABELS__"
    text = "\n".join(_indent(_escape(yamlfmt.dump([data])), pad))
    line = re.compile(r"^(?P<pad> *)labels: __OBSPACK_BURN_LABELS__$", re.MULTILINE)
    return line.sub(
        lambda m: f'{m["pad"]}labels:{{{{ include "obspack.sloAlertLabels" (list $ {pair}) | nindent {len(m["pad"]) + 2} }}}}',
        text,
    ).splitlines()


def _enabled(rule: AlertRule | RecordingRule) -> str:
    """The value that switches a rule on: the alert's `enabled`, `slos.enabled`, or its SLO's `enabled`."""
    if isinstance(rule, AlertRule):
        return "$.Values.slos.enabled" if rule.alert == BURN else f"$.Values.alerts.{rule.alert}.enabled"
    sli = dict(rule.labels).get("slo")
    return f"$.Values.slos.{sli}.enabled" if sli else ""


def _alert_block(rule: AlertRule, s: _Sentinels, pad: str) -> list[str]:
    """One alert as YAML lines: its `for` follows obspack's rule for zero durations, its labels a helper."""
    if rule.alert == BURN:
        return _burn_block(rule, pad)
    data = rule.to_dict()
    data["labels"] = f"__OBSPACK_LABELS_{rule.alert}__"
    text = "\n".join(_indent(_escape(yamlfmt.dump([data])), pad))
    zero = " ".join(json.dumps(d) for d in _zero_durations())

    def for_line(m: re.Match[str]) -> str:
        alert = s.for_lines.get(m["value"])
        if alert != rule.alert:
            raise RenderError(f"{rule.alert}: its `for` does not come from alerts.{rule.alert}.for")
        path = f"$.Values.alerts.{alert}.for"
        pad = m["pad"]
        return f"{pad}{{{{- if not (has (toString {path}) (list {zero})) }}}}\n{pad}for: {{{{ {path} }}}}\n{pad}{{{{- end }}}}"

    def labels_line(m: re.Match[str]) -> str:
        width = len(m["pad"]) + 2
        return f'{m["pad"]}labels:{{{{ include "obspack.alertLabels" (list $ "{m["alert"]}") | nindent {width} }}}}'

    text, found = _FOR_LINE.subn(for_line, text, count=1)
    if not found:
        raise RenderError(f"{rule.alert}: its `for` does not come from alerts.{rule.alert}.for")
    return _LABELS_LINE.sub(labels_line, text).splitlines()


def _groups_lines(pack: Pack, s: _Sentinels, pad: str) -> list[str]:
    """The items of spec.groups, indented by `pad`; each alert is wrapped in its enabled flag."""
    lines: list[str] = []
    inner = pad + "  "
    for group in pack.recording_groups + pack.alert_groups:
        switches = list(dict.fromkeys(_enabled(r) for r in group.rules if isinstance(r, AlertRule)))
        condition = "or " + " ".join(switches) if switches else ""
        if group.name.startswith(f"{GROUP_PREFIX}-slo"):
            # An SLI's own group goes with its SLO: no group of empty rules when the values switch it off.
            slis = {dict(r.labels).get("slo") for r in group.rules if isinstance(r, RecordingRule)}
            sli = slis.pop() if len(slis) == 1 else None
            condition = f"and $.Values.slos.enabled $.Values.slos.{sli}.enabled" if sli else "$.Values.slos.enabled"
        if condition:
            lines.append(pad + "{{- if " + condition + " }}")
        lines += _indent(_escape(yamlfmt.dump([{"name": group.name}])), pad)
        if group.interval != s.interval:
            raise RenderError(
                f"rule group {group.name}: its interval does not come from the config's rule_interval"
            )
        lines += [
            f"{inner}{{{{- with $.Values.ruleInterval }}}}",
            f"{inner}interval: {{{{ . }}}}",
            f"{inner}{{{{- end }}}}",
        ]
        lines.append(f"{inner}rules:")
        for rule in group.rules:
            switch = _enabled(rule)
            if switch:
                lines.append(f"{inner}{{{{- if {switch} }}}}")
            if isinstance(rule, AlertRule):
                lines += _alert_block(rule, s, inner)
            else:
                lines += _indent(_escape(yamlfmt.dump([rule.to_dict()])), inner)
            if switch:
                lines.append(f"{inner}{{{{- end }}}}")
        if condition:
            lines.append(pad + "{{- end }}")
    return lines


_URL_VARIABLES = (
    '{{- $runbookBase := ternary %s (printf "%%s/" (regexReplaceAll "/+$" .Values.runbookBaseURL ""))'
    ' (eq .Values.runbookBaseURL "") }}\n'
    '{{- $grafanaURL := regexReplaceAll "/+$" .Values.grafanaURL "" }}'
)


def _url_variables() -> str:
    # The prefix of runbook URLs without a base URL, as obspack itself makes it (runbooks/<slug>.md).
    relative = runbook_url(ObspackConfig(runbook_base_url=""), "SLUG").removesuffix("SLUG.md")
    return _URL_VARIABLES % json.dumps(relative)


def _rule_template(pack: Pack, s: _Sentinels) -> str:
    head = [
        f"{{{{- /* {_generated_comment()} */}}}}",
        "{{- if .Values.prometheusRule.enabled }}",
        _url_variables(),
        "apiVersion: monitoring.coreos.com/v1",
        "kind: PrometheusRule",
        "metadata:",
        '  name: {{ include "obspack.fullname" . }}',
        "  namespace: {{ .Values.prometheusRule.namespace | default .Release.Namespace }}",
        '  labels: {{- include "obspack.monitoringLabels" (list . .Values.prometheusRule.labels) | nindent 4 }}',
        "  {{- with .Values.prometheusRule.annotations }}",
        "  annotations: {{- toYaml . | nindent 4 }}",
        "  {{- end }}",
        "spec:",
        "  groups:",
    ]
    body = _groups_lines(pack, s, "  ")
    return s.substitute("\n".join(head + body + ["{{- end }}"]) + "\n")


def chart_pack(cfg: ObspackConfig, *, dashboards: bool = True) -> Pack:
    """The part of `build(cfg)` the chart renders: rule groups and dashboards (no runbooks or unit tests,
    which would be made from sentinel values for nothing). A test proves the groups equal build()'s."""
    return Pack(
        version=__version__,
        source=CHART_SOURCE,
        cluster_label=cfg.cluster_label,
        recording_groups=tuple(all_recording_groups(cfg)),
        alert_groups=tuple(alert_groups(cfg)),
        alerts=(),
        dashboards=tuple(
            Dashboard(name=name, title=str(model["title"]), uid=str(model["uid"]), model=model)
            for name, model in (all_dashboards(cfg) if dashboards else [])
        ),
        runbooks=(),
        rule_tests=(),
        alertmanager={},
        prometheus_rule=cfg.prometheus_rule.model_dump(),
        grafana=cfg.grafana.model_dump(),
    )


def _checked_rule_template(cfg: ObspackConfig) -> str:
    """The PrometheusRule template, rendered with two sentinel sets that must give the same text."""
    first, second = (
        _rule_template(chart_pack(s.config(cfg), dashboards=False), s) for s in map(_Sentinels.make, (0, 1))
    )
    leftover = _Sentinels.LEFTOVER.search(first)
    if leftover:
        line = first[: leftover.start()].count("\n") + 1
        raise RenderError(
            f"{RULE_TEMPLATE}:{line}: a setting the chart exposes is used in a form the chart cannot template "
            f"({leftover.group(0)!r}); print the setting as it is in the rule"
        )
    if first != second:
        a, b = first.splitlines(), second.splitlines()
        line = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b))) + 1
        raise RenderError(
            f"{RULE_TEMPLATE}:{line}: the rule depends on a chart setting beyond printing it (a computed "
            "threshold, or severity or labels in an annotation); print the setting itself so Helm values can set it"
        )
    return first


_HELPERS = """
{{- /*
obspack.float: a number as Python's str() writes a float (5 -> 5.0, 0.95 -> 0.95), so the chart prints
thresholds exactly as `obspack render` does.
*/}}
{{- define "obspack.float" -}}
{{- $v := float64 . -}}
{{- if eq (floor $v) $v }}{{ printf "%.1f" $v }}{{ else }}{{ $v }}{{ end -}}
{{- end }}

{{- /* obspack.floatG: a number as Python's format(x, "g") writes it (5 -> 5, 0.05 -> 0.05). */}}
{{- define "obspack.floatG" -}}
{{- printf "%.6g" (float64 .) -}}
{{- end }}

{{- /*
obspack.alertLabels: the labels of one alert, called with (list $ "AlertName"): commonLabels, then the
alert's own labels, then its severity, each winning over the ones before.
*/}}
{{- define "obspack.alertLabels" -}}
{{- $root := index . 0 -}}
{{- $alert := index $root.Values.alerts (index . 1) -}}
{{- $labels := merge (dict "severity" $alert.severity) ($alert.labels | default dict) ($root.Values.commonLabels | default dict) -}}
{{- toYaml $labels -}}
{{- end }}

{{- /*
obspack.sloAlertLabels: the labels of one VLLMErrorBudgetBurn rule, called with (list $ "severity=..."
"long=..." "short=..."): commonLabels, then slos.labels, then the rule's window pair, each winning over
the ones before.
*/}}
{{- define "obspack.sloAlertLabels" -}}
{{- $root := index . 0 -}}
{{- $pair := dict -}}
{{- range (rest .) }}{{ $kv := splitn "=" 2 . }}{{ $_ := set $pair $kv._0 $kv._1 }}{{ end -}}
{{- $labels := merge $pair ($root.Values.slos.labels | default dict) ($root.Values.commonLabels | default dict) -}}
{{- toYaml $labels -}}
{{- end }}

{{- /*
obspack.le: the bucket matcher of a latency threshold, as obspack writes it: le="2.5", or both
spellings of a whole number, le=~"1(\\\\.0)?" (Python clients and Prometheus 3 write 1.0, Go clients 1).
*/}}
{{- define "obspack.le" -}}
{{- $v := float64 . -}}
{{- if eq (floor $v) $v }}le=~"{{ printf "%.0f" $v }}(\\\\.0)?"{{ else }}le="{{ $v }}"{{ end -}}
{{- end }}
"""


def _helpers_tpl() -> str:
    return f"{{{{- /* {_generated_comment()} */}}}}\n" + _HELPERS


# ---------------------------------------------------------------------------------------------------------
# values.yaml and values.schema.json, both written from one table


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
    "propertyNames": {"pattern": "^([a-zA-Z][a-zA-Z0-9_]*|_([a-zA-Z0-9][a-zA-Z0-9_]*)?)$", "not": {"enum": sorted(RULE_LABELS)}},
    "additionalProperties": {"type": "string", "minLength": 1, "maxLength": 1024, "not": {"pattern": "[{][{]|[}][}]"}},
}


def _setting_schema(setting: _Setting) -> dict[str, Any]:
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


def _alerts_section(cfg: ObspackConfig) -> S:
    summaries = {a.alert: a.summary for a in all_alerts(cfg)}
    dumped = cfg.alerts.model_dump(by_alias=True, mode="json")
    children: dict[str, V | S] = {}
    fixed = []
    for alert in Alerts.model_fields:
        settings: dict[str, V | S] = {}
        for s in _settings():
            if s.alert != alert:
                continue
            if s.kind == "fixed":
                fixed.append(f"{alert}.{s.key}={dumped[alert][s.key]!r}")
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
    children: dict[str, V | S] = {"enabled": V(cfg.slos.enabled, BOOL, "the SLO rules and VLLMErrorBudgetBurn")}
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
    fixed = ", ".join(
        f"{key}={getattr(cfg.slos, key)!r}" for key in ("period", "min_requests", "models", "speedup")
    )
    return S(
        "Per-model SLOs and their burn-rate alert (docs/slos.md). Fixed when the chart was rendered (render "
        f"it from your obspack.yaml to change them): {fixed}, availability.handler_regex="
        f"{cfg.slos.availability.handler_regex!r}.",
        children,
    )


def _values_table(cfg: ObspackConfig) -> dict[str, V | S]:
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


def _scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _emit(table: dict[str, V | S], indent: int) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    for key, item in table.items():
        if isinstance(item, S):
            if indent == 0:
                lines.append("")
            lines += [f"{pad}# {line}" for line in textwrap.wrap(item.doc, 110 - len(pad))]
            lines.append(f"{pad}{key}:")
            lines += _emit(item.children, indent + 1)
            continue
        comment = f"  # {item.doc}" if item.doc else ""
        if isinstance(item.default, (dict, list)) and item.default:
            if indent == 0:
                lines.append("")
            if item.doc:
                lines += [f"{pad}# {line}" for line in textwrap.wrap(item.doc, 110 - len(pad))]
            lines.append(f"{pad}{key}:")
            lines += [f"{pad}  {line}" for line in yamlfmt.dump(item.default).splitlines()]
        else:
            line = f"{pad}{key}: {_scalar(item.default)}"
            if item.doc and (indent == 0 or len(line + comment) > 110):
                lines += [""] if indent == 0 else []
                lines += [f"{pad}# {text}" for text in textwrap.wrap(item.doc, 110 - len(pad))]
                comment = ""
            lines.append(line + comment)
    return lines


def values_yaml(cfg: ObspackConfig) -> str:
    head = [
        f"# {_generated_comment()}",
        "# Defaults of the obspack chart. The alert settings are obspack's own defaults (obspack/config.py);",
        "# values.schema.json rejects unknown keys and wrong types.",
    ]
    return "\n".join(head + _emit(_values_table(cfg), 0)) + "\n"


def _schema(item: V | S) -> dict[str, Any]:
    if isinstance(item, V):
        return {**({"description": item.doc} if item.doc else {}), **item.schema}
    return {
        **({"description": item.doc} if item.doc else {}),
        "type": "object",
        "additionalProperties": False,
        "properties": {key: _schema(child) for key, child in item.children.items()},
    }


def values_schema(cfg: ObspackConfig) -> dict[str, Any]:
    root = _schema(S("Values of the obspack chart.", _values_table(cfg)))
    return {"$schema": "http://json-schema.org/draft-07/schema#", "$comment": _generated_comment(), **root}


# ---------------------------------------------------------------------------------------------------------
# Chart.yaml and the sidecar patch


def chart_yaml() -> str:
    data = {
        "apiVersion": "v2",
        "name": "obspack",
        "description": "Prometheus rules, Grafana dashboards and an exporter for vLLM on Kubernetes GPU nodes",
        "type": "application",
        "version": __version__,
        "appVersion": __version__,
        "kubeVersion": ">=1.25.0-0",
        "keywords": ["vllm", "gpu", "prometheus", "grafana", "monitoring"],
    }
    return f"# {_generated_comment()}\n" + yamlfmt.dump(data)


def exporter_probe() -> dict[str, Any]:
    return {
        "httpGet": {"path": "/healthz", "port": SIDECAR_PORT_NAME},
        "periodSeconds": 10,
        "timeoutSeconds": 2,
    }


def sidecar_patch() -> str:
    """A strategic-merge patch that adds the exporter (and the CUDA probe's shared folder) to a vLLM pod."""
    exporter = {
        "name": "obspack-exporter",
        "image": f"{EXPORTER_IMAGE}:{__version__}",
        "imagePullPolicy": "IfNotPresent",
        "command": ["obspack", "exporter"],
        "args": [
            "--target=http://127.0.0.1:8000/metrics",
            f"--listen=0.0.0.0:{EXPORTER_PORT}",
            f"--probe-dir={PROBE_DIR}",
        ],
        "ports": [{"name": SIDECAR_PORT_NAME, "containerPort": EXPORTER_PORT, "protocol": "TCP"}],
        "readinessProbe": exporter_probe(),
        "livenessProbe": {**exporter_probe(), "failureThreshold": 6},
        "resources": EXPORTER_RESOURCES,
        "securityContext": EXPORTER_SECURITY,
        "volumeMounts": [
            {"name": "obspack-probe", "mountPath": PROBE_DIR, "readOnly": True},
            {"name": "obspack-tmp", "mountPath": "/tmp"},
        ],
    }
    vllm = {
        "name": "vllm",
        "env": [{"name": "OBSPACK_PROBE_DIR", "value": PROBE_DIR}],
        "volumeMounts": [{"name": "obspack-probe", "mountPath": PROBE_DIR}],
    }
    patch = {
        "spec": {
            "template": {
                "metadata": {"labels": dict(SIDECAR_POD_LABEL)},
                "spec": {
                    "containers": [vllm, exporter],
                    "volumes": [
                        {"name": "obspack-probe", "emptyDir": {"sizeLimit": "16Mi"}},
                        {"name": "obspack-tmp", "emptyDir": {"sizeLimit": "16Mi"}},
                    ],
                },
            }
        }
    }
    head = [
        f"# {_generated_comment()}",
        "# Adds the obspack exporter as a sidecar to a vLLM Deployment (or StatefulSet):",
        "#   kubectl -n <namespace> patch deployment <vllm> --type strategic --patch-file sidecar-patch.yaml",
        "# `name: vllm` must be the name of your vLLM container: it gets the CUDA probe's folder and",
        "# OBSPACK_PROBE_DIR (the probe runs only where obspack is installed in the vLLM image; without it the",
        "# exporter still serves the KV-cache series). Change --target if vLLM does not listen on port 8000.",
        "# Then scrape the sidecars with the chart: --set sidecar.podMonitor.enabled=true",
    ]
    return "\n".join(head) + "\n" + yamlfmt.dump(patch)
