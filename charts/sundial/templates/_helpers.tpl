{{/* The objects' name prefix (values.yaml, fullnameOverride). */}}
{{- define "sundial.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else if contains "sundial" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-sundial" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object's metadata. */}}
{{- define "sundial.labels" -}}
app.kubernetes.io/part-of: sundial
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The image of every Sundial container. */}}
{{- define "sundial.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The CloudNativePG Cluster's name. */}}
{{- define "sundial.dbName" -}}
{{ include "sundial.fullname" . }}-db
{{- end -}}

{{/* SUNDIAL_DATABASE_URL: the CloudNativePG app Secret's uri, or the
external Secret's key. */}}
{{- define "sundial.databaseURL" -}}
- name: SUNDIAL_DATABASE_URL
  valueFrom:
    secretKeyRef:
{{- if .Values.postgresql.cnpg.enabled }}
      name: {{ include "sundial.dbName" . }}-app
      key: uri
{{- else }}
      name: {{ required "postgresql.external.secretName is required when postgresql.cnpg.enabled is false" .Values.postgresql.external.secretName }}
      key: {{ required "postgresql.external.secretKey is required when postgresql.cnpg.enabled is false" .Values.postgresql.external.secretKey }}
{{- end }}
{{- end -}}

{{/* The port of telemetry.otlpEndpoint: the URL's, else OTLP/HTTP's 4318
(443 for https). */}}
{{- define "sundial.otlpPort" -}}
{{- $u := urlParse .Values.telemetry.otlpEndpoint -}}
{{- $port := regexFind ":[0-9]+$" (get $u "host") -}}
{{- if $port -}}
{{- trimPrefix ":" $port -}}
{{- else if eq (get $u "scheme") "https" -}}
443
{{- else -}}
4318
{{- end -}}
{{- end -}}
