{{/* The chart's name: podreload, or nameOverride. */}}
{{- define "podreload.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 52 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the controller's objects: fullnameOverride, else
<release>-controller when the release name holds the chart's name, else
<release>-<name>-controller.
*/}}
{{- define "podreload.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "podreload.name" . }}
{{- $base := .Release.Name }}
{{- if not (contains $name .Release.Name) }}
{{- $base = printf "%s-%s" .Release.Name $name }}
{{- end }}
{{- printf "%s-controller" ($base | trunc 52 | trimSuffix "-") }}
{{- end }}
{{- end }}

{{/* The labels that select the controller's pods. */}}
{{- define "podreload.selectorLabels" -}}
app.kubernetes.io/name: {{ include "podreload.name" . }}-controller
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of every object. */}}
{{- define "podreload.labels" -}}
{{ include "podreload.selectorLabels" . }}
app.kubernetes.io/part-of: podreload
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The controller's service account. */}}
{{- define "podreload.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "podreload.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The controller's image: repository, tag (default appVersion), digest. */}}
{{- define "podreload.image" -}}
{{- $image := printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- if .Values.image.digest }}
{{- $image = printf "%s@%s" $image .Values.image.digest }}
{{- end }}
{{- $image }}
{{- end }}
