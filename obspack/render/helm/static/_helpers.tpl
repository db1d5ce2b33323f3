{{/* Names and labels shared by every template (hand-written; the generated templates call these). */}}

{{- define "obspack.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{- define "obspack.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end }}

{{- define "obspack.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{- define "obspack.labels" -}}
helm.sh/chart: {{ include "obspack.chart" . }}
app.kubernetes.io/name: {{ include "obspack.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels of PrometheusRules, ServiceMonitors and PodMonitors; called with (list $ .Values.<object>.labels). */}}
{{- define "obspack.monitoringLabels" -}}
{{- $root := index . 0 -}}
{{- $labels := merge (dict) (index . 1 | default dict) $root.Values.monitoringLabels (include "obspack.labels" $root | fromYaml) -}}
{{- toYaml $labels -}}
{{- end }}

{{- define "obspack.dashboardLabels" -}}
{{- toYaml (merge (dict) .Values.dashboards.labels (include "obspack.labels" . | fromYaml)) -}}
{{- end }}

{{- define "obspack.dashboardAnnotations" -}}
{{- with .Values.dashboards -}}
{{- if and .folderAnnotation .folder -}}
{{- toYaml (dict .folderAnnotation .folder) -}}
{{- end -}}
{{- end -}}
{{- end }}

{{- define "obspack.exporter.fullname" -}}
{{- printf "%s-exporter" (include "obspack.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{- define "obspack.exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "obspack.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: exporter
{{- end }}

{{- define "obspack.exporter.labels" -}}
{{ include "obspack.labels" . }}
app.kubernetes.io/component: exporter
{{- end }}

{{- define "obspack.exporter.serviceAccountName" -}}
{{- if .Values.exporter.serviceAccount.create -}}
{{- .Values.exporter.serviceAccount.name | default (include "obspack.exporter.fullname" .) -}}
{{- else -}}
{{- .Values.exporter.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end }}

{{/* host:port for --listen; an IPv6 host goes in brackets. */}}
{{- define "obspack.exporter.listen" -}}
{{- $host := .Values.exporter.listenHost -}}
{{- if contains ":" $host -}}[{{ $host }}]{{- else -}}{{ $host }}{{- end -}}:{{ .Values.exporter.port }}
{{- end }}
