"""The PrometheusRule template: obspack's rule groups rendered with sentinel values, each replaced by the Helm
expression of its value; enabled flags and labels templated structurally."""

from __future__ import annotations

import json
import re

from obspack.conventions import GROUP_PREFIX
from obspack.errors import RenderError
from obspack.pack import Pack
from obspack.pack.chart import Chart
from obspack.pack.chart.layout import RULE_TEMPLATE, generated_comment
from obspack.pack.chart.sentinels import Sentinels
from obspack.pack.chart.settings import zero_durations
from obspack.render import yamlfmt
from obspack.rules.alerts import RUNBOOKS
from obspack.rules.alerts.slo import ALERT as BURN
from obspack.rules.model import AlertRule, RecordingRule


def _escape(text: str) -> str:
    """Make obspack's own `{{ ... }}` (alert templates, Grafana legends) literal text for Helm."""
    return text.replace("{{", '{{ "{{" }}')


_FOR_LINE = re.compile(r"^(?P<pad> *)for: (?P<value>\S+)$", re.MULTILINE)
LABELS_PLACEHOLDER = "__OBSPACK_LABELS__"
_LABELS_LINE = re.compile(rf"^(?P<pad> *)labels: {LABELS_PLACEHOLDER}$", re.MULTILINE)


def _indent(text: str, pad: str) -> list[str]:
    return [pad + line for line in text.splitlines()]


def _enabled(rule: AlertRule | RecordingRule) -> str:
    """The value that switches a rule on: the alert's `enabled`, `slos.enabled`, or its SLO's `enabled`."""
    if isinstance(rule, AlertRule):
        return "$.Values.slos.enabled" if rule.alert == BURN else f"$.Values.alerts.{rule.alert}.enabled"
    sli = dict(rule.labels).get("slo")
    return f"$.Values.slos.{sli}.enabled" if sli else ""


def _labels_include(rule: AlertRule) -> str:
    """The helper that writes an alert's labels from the values. VLLMErrorBudgetBurn's window pair and
    severity are fixed; commonLabels and slos.labels come from the values."""
    if rule.alert == BURN:
        fixed = {**dict(rule.labels), "severity": rule.severity.value}
        pair = " ".join(json.dumps(f"{k}={fixed[k]}") for k in ("severity", "long", "short"))
        return f'"obspack.sloAlertLabels" (list $ {pair})'
    return f'"obspack.alertLabels" (list $ "{rule.alert}")'


def _alert_block(rule: AlertRule, s: Sentinels, pad: str) -> list[str]:
    """One alert as YAML lines: its `for` follows obspack's rule for zero durations (the burn alert's is
    fixed by its window pair), its labels a helper."""
    data = rule.to_dict()
    data["labels"] = LABELS_PLACEHOLDER
    text = "\n".join(_indent(_escape(yamlfmt.dump([data])), pad))
    zero = " ".join(json.dumps(d) for d in zero_durations())

    def for_line(m: re.Match[str]) -> str:
        alert = s.for_lines.get(m["value"])
        if alert != rule.alert:
            raise RenderError(f"{rule.alert}: its `for` does not come from alerts.{rule.alert}.for")
        path = f"$.Values.alerts.{alert}.for"
        pad = m["pad"]
        return f"{pad}{{{{- if not (has (toString {path}) (list {zero})) }}}}\n{pad}for: {{{{ {path} }}}}\n{pad}{{{{- end }}}}"

    if rule.alert != BURN:
        text, found = _FOR_LINE.subn(for_line, text, count=1)
        if not found:
            raise RenderError(f"{rule.alert}: its `for` does not come from alerts.{rule.alert}.for")
    include = _labels_include(rule)
    return _LABELS_LINE.sub(
        lambda m: f'{m["pad"]}labels:{{{{ include {include} | nindent {len(m["pad"]) + 2} }}}}', text
    ).splitlines()


def _groups_lines(pack: Pack, s: Sentinels, pad: str) -> list[str]:
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
            condition = (
                f"and $.Values.slos.enabled $.Values.slos.{sli}.enabled" if sli else "$.Values.slos.enabled"
            )
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
    return _URL_VARIABLES % json.dumps(RUNBOOKS)


def _rule_template(pack: Pack, s: Sentinels) -> str:
    head = [
        f"{{{{- /* {generated_comment()} */}}}}",
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


def rule_template(chart: Chart) -> str:
    """The PrometheusRule template, rendered with two sentinel sets that must give the same text."""
    first, second = (_rule_template(pack, s) for pack, s in chart.rule_packs)
    leftover = Sentinels.LEFTOVER.search(first)
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


def helpers_tpl() -> str:
    return f"{{{{- /* {generated_comment()} */}}}}\n" + _HELPERS
