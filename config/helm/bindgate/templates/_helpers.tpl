{{/* Chart name. */}}
{{- define "bindgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Resource name prefix: the release name when it contains the chart name. */}}
{{- define "bindgate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "bindgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "bindgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "bindgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "bindgate.labels" -}}
helm.sh/chart: {{ include "bindgate.chart" . }}
{{ include "bindgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: bindgate
{{- end }}

{{- define "bindgate.serviceAccountName" -}}
{{ include "bindgate.fullname" . }}-controller-manager
{{- end }}

{{- define "bindgate.webhookServiceName" -}}
{{ include "bindgate.fullname" . }}-webhook-service
{{- end }}

{{- define "bindgate.webhookConfigName" -}}
{{ include "bindgate.fullname" . }}-mutating-webhook-configuration
{{- end }}

{{- define "bindgate.validatingWebhookConfigName" -}}
{{ include "bindgate.fullname" . }}-validating-webhook-configuration
{{- end }}

{{- define "bindgate.webhookSecretName" -}}
{{ include "bindgate.fullname" . }}-webhook-server-cert
{{- end }}

{{- define "bindgate.sealSecretName" -}}
{{ include "bindgate.fullname" . }}-seal-key
{{- end }}

{{- define "bindgate.certificateName" -}}
{{ include "bindgate.fullname" . }}-serving-cert
{{- end }}

{{/* self-signed | cert-manager | none: how the webhook gets its certificate. */}}
{{- define "bindgate.webhookCertMode" -}}
{{- if not .Values.webhook.enabled }}none
{{- else if .Values.webhook.certManager.enabled }}cert-manager
{{- else }}self-signed
{{- end }}
{{- end }}
