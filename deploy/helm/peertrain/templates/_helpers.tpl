{{/* Object names: <release>-<component>. */}}
{{- define "peertrain.name" -}}
{{- printf "%s-%s" .root.Release.Name .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "peertrain.selectorLabels" -}}
app.kubernetes.io/name: peertrain
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "peertrain.labels" -}}
{{ include "peertrain.selectorLabels" . }}
app.kubernetes.io/part-of: peertrain
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* An image reference: registry prefix (if any), repository, pinned tag. */}}
{{- define "peertrain.image" -}}
{{- $registry := .root.Values.image.registry -}}
{{- if $registry }}{{ $registry }}/{{ end }}{{ .repository }}:{{ .tag }}
{{- end -}}

{{/* A PeerTrain image (peertrain/<name>) at image.tag, else the appVersion. */}}
{{- define "peertrain.ownImage" -}}
{{- include "peertrain.image" (dict "root" .root "repository" (printf "peertrain/%s" .name) "tag" (.root.Values.image.tag | default .root.Chart.AppVersion)) -}}
{{- end -}}

{{/* One environment variable from a key of the operator's Secret. */}}
{{- define "peertrain.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .root.Values.existingSecret | required "existingSecret: the name of the Secret holding the credentials" }}
      key: {{ .key }}
{{- if .optional }}
      optional: true
{{- end }}
{{- end -}}

{{- define "peertrain.mongoHosts" -}}
{{- $root := . -}}
{{- $hosts := list -}}
{{- range $i := until (int .Values.mongodb.replicas) -}}
{{- $hosts = append $hosts (printf "%s-%d.%s.%s.svc:27017" (include "peertrain.name" (dict "root" $root "component" "mongodb")) $i (include "peertrain.name" (dict "root" $root "component" "mongodb-headless")) $root.Release.Namespace) -}}
{{- end -}}
{{- join "," $hosts -}}
{{- end -}}

{{/* The connection settings every service shares (PEERTRAIN_<SERVICE>_...). The URLs
take their credentials from the Secret through $(VAR) references. */}}
{{- define "peertrain.stackEnv" -}}
{{- $p := printf "PEERTRAIN_%s_" (upper .component) -}}
{{ include "peertrain.secretEnv" (dict "root" .root "name" "MONGO_USER" "key" "mongodb-username") }}
{{ include "peertrain.secretEnv" (dict "root" .root "name" "MONGO_PASSWORD" "key" "mongodb-password") }}
{{ include "peertrain.secretEnv" (dict "root" .root "name" "RABBITMQ_USER" "key" "rabbitmq-username") }}
{{ include "peertrain.secretEnv" (dict "root" .root "name" "RABBITMQ_PASSWORD" "key" "rabbitmq-password") }}
{{ include "peertrain.secretEnv" (dict "root" .root "name" (printf "%sS3_ACCESS_KEY" $p) "key" "minio-root-user") }}
{{ include "peertrain.secretEnv" (dict "root" .root "name" (printf "%sS3_SECRET_KEY" $p) "key" "minio-root-password") }}
- name: {{ $p }}ENVIRONMENT
  value: {{ .root.Values.environment | quote }}
- name: {{ $p }}HOST
  value: 0.0.0.0
- name: {{ $p }}PORT
  value: "8000"
- name: {{ $p }}LOG_JSON
  value: "true"
- name: {{ $p }}MONGO_URL
  value: {{ printf "mongodb://$(MONGO_USER):$(MONGO_PASSWORD)@%s/?replicaSet=rs0&authSource=admin" (include "peertrain.mongoHosts" .root) | quote }}
- name: {{ $p }}AMQP_URL
  value: {{ printf "amqp://$(RABBITMQ_USER):$(RABBITMQ_PASSWORD)@%s:5672/" (include "peertrain.name" (dict "root" .root "component" "rabbitmq")) | quote }}
- name: {{ $p }}S3_ENDPOINT_URL
  value: {{ printf "http://%s:9000" (include "peertrain.name" (dict "root" .root "component" "minio")) | quote }}
- name: {{ $p }}S3_BUCKET
  value: {{ .root.Values.minio.bucket | quote }}
{{- end -}}

{{- define "peertrain.metricsAnnotations" -}}
{{- if .root.Values.metrics.annotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: {{ .path | default "/metrics" | quote }}
{{- end }}
{{- end -}}

{{- define "peertrain.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "peertrain.name" . }}
  labels:
    {{- include "peertrain.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .maxUnavailable | default .root.Values.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "peertrain.selectorLabels" . | nindent 6 }}
{{- end -}}

{{- define "peertrain.volumeClaim" -}}
- metadata:
    name: {{ .name }}
  spec:
    accessModes: [{{ .accessMode | default "ReadWriteOnce" }}]
    {{- with .storage.storageClass }}
    storageClassName: {{ . }}
    {{- end }}
    resources:
      requests:
        storage: {{ .storage.size }}
{{- end -}}

{{/* A clustered store's members on different nodes (storeAntiAffinity): "hard" refuses
to schedule two on one node, "soft" prefers not to (a cluster with fewer nodes than
members still runs). */}}
{{- define "peertrain.antiAffinity" -}}
podAntiAffinity:
  {{- if eq .root.Values.storeAntiAffinity "hard" }}
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "peertrain.selectorLabels" . | nindent 10 }}
  {{- else }}
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "peertrain.selectorLabels" . | nindent 12 }}
  {{- end }}
{{- end -}}

{{/* NetworkPolicy peers: the release's pods of each of .components. */}}
{{- define "peertrain.npPods" -}}
{{- $root := .root -}}
{{- range .components }}
- podSelector:
    matchLabels:
      {{- include "peertrain.selectorLabels" (dict "root" $root "component" .) | nindent 6 }}
{{- end }}
{{- end -}}

{{/* A NetworkPolicy egress rule: DNS (networkPolicy.dnsTo). */}}
{{- define "peertrain.npDns" -}}
- ports: [{port: 53, protocol: UDP}, {port: 53, protocol: TCP}]
  {{- with .Values.networkPolicy.dnsTo }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
