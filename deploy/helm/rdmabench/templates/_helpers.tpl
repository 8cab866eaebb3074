{{/* The chart's name. */}}
{{- define "rdmabench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' name: the release's, with the chart's unless the release's
holds it. At most 52 characters: the mesh's objects add "-mesh", and pod i
of its Job adds "-<i>" to that, within DNS's 63 of a label.
*/}}
{{- define "rdmabench.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "rdmabench.meshName" -}}
{{- include "rdmabench.fullname" . }}-mesh
{{- end }}

{{- define "rdmabench.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "rdmabench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The agent's pods: what its Service and DaemonSet select. */}}
{{- define "rdmabench.agentSelector" -}}
app.kubernetes.io/name: {{ include "rdmabench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}

{{/* The mesh's pods. */}}
{{- define "rdmabench.meshSelector" -}}
app.kubernetes.io/name: {{ include "rdmabench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: mesh
{{- end }}

{{- define "rdmabench.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end }}

{{/* The agent's token Secret's name, "" without one. */}}
{{- define "rdmabench.tokenSecret" -}}
{{- if .Values.agent.token.existingSecret }}
{{- .Values.agent.token.existingSecret }}
{{- else if .Values.agent.token.value }}
{{- include "rdmabench.fullname" . }}-token
{{- end }}
{{- end }}

{{/*
The containers' resources: the values' (res), with the RDMA device
plugin's resources added to the requests and the limits.
*/}}
{{- define "rdmabench.resources" -}}
{{- $res := deepCopy (.res | default dict) }}
{{- with .root.Values.rdma.resources }}
{{- $_ := set $res "limits" (merge (deepCopy .) ($res.limits | default dict)) }}
{{- $_ := set $res "requests" (merge (deepCopy .) ($res.requests | default dict)) }}
{{- end }}
{{- toYaml $res }}
{{- end }}

{{/* The verbs device files and the security context, for both workloads. */}}
{{- define "rdmabench.securityContext" -}}
{{- if .Values.rdma.privileged -}}
privileged: true
{{- else -}}
capabilities:
  add: ["IPC_LOCK"] # register memory (ulimit -l)
{{- end }}
{{- end }}
