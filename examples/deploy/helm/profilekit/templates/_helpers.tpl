{{- define "profilekit.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The name of every object: the release's, or release-chart. */}}
{{- define "profilekit.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "profilekit.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "profilekit.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "profilekit.selectorLabels" -}}
app.kubernetes.io/name: {{ include "profilekit.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "profilekit.labels" -}}
{{ include "profilekit.selectorLabels" . }}
app.kubernetes.io/component: controller
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The ServiceAccount subject of every binding. */}}
{{- define "profilekit.subject" -}}
- kind: ServiceAccount
  name: {{ include "profilekit.fullname" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{- define "profilekit.image" -}}
{{- $repo := required "image.repository is required: the repository you pushed the profilekit image to (make image builds it), such as --set image.repository=registry.example.org/profilekit" .Values.image.repository }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repo .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repo (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* The host configuration as text: the config value as given (a string
keeps its comments), or files/host.yaml when it is empty. With the value
page.enabled, a configuration without a page section gets one that turns
the page on; one whose page section leaves it off is refused. */}}
{{- define "profilekit.configText" -}}
{{- $text := "" }}
{{- if kindIs "string" .Values.config }}
{{- $text = .Values.config }}
{{- else if .Values.config }}
{{- $text = toYaml .Values.config }}
{{- else }}
{{- $text = .Files.Get "files/host.yaml" }}
{{- end }}
{{- if .Values.page.enabled }}
{{- $cfg := $text | fromYaml }}
{{- if not (hasKey $cfg "page") }}
{{- $text = printf "%s\n# The tenant page, turned on by the chart's value page.enabled.\npage:\n  enabled: true\n" (trimSuffix "\n" $text) }}
{{- else if not (($cfg.page | default dict).enabled) }}
{{- fail "page.enabled is true, and the configuration's page section leaves the page off: add enabled: true to it" }}
{{- end }}
{{- end }}
{{- $text }}
{{- end }}

{{/* The host configuration as YAML the templates read with fromYaml. */}}
{{- define "profilekit.config" -}}
{{- $cfg := include "profilekit.configText" . | fromYaml }}
{{- if hasKey $cfg "Error" }}
{{- fail (printf "config is not valid YAML: %s" $cfg.Error) }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/* The plugin sections that run, as a YAML map of kind to section: every
section of plugins except those with enabled: off (or YAML's false). */}}
{{- define "profilekit.enabledPlugins" -}}
{{- $cfg := include "profilekit.config" . | fromYaml }}
{{- $out := dict }}
{{- range $kind, $sec := $cfg.plugins | default dict }}
{{- $sec = $sec | default dict }}
{{- $enabled := get $sec "enabled" }}
{{- if not (or (and (kindIs "bool" $enabled) (not $enabled)) (eq (toString $enabled) "off")) }}
{{- $_ := set $out $kind $sec }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/* The webhook section of the configuration with the host's defaults
(examples/host/internal/hostconfig/webhook.go). */}}
{{- define "profilekit.webhook" -}}
{{- $cfg := include "profilekit.config" . | fromYaml }}
{{- $w := $cfg.webhook | default dict }}
{{- $ss := $w.selfSigned | default dict }}
enabled: {{ $w.enabled | default false }}
port: {{ $w.port | default 9443 }}
path: {{ $w.path | default "/validate-profiles" }}
certificates: {{ $w.certificates | default "files" }}
certDir: {{ $w.certDir | default "/tmp/k8s-webhook-server/serving-certs" }}
secretNamespace: {{ $ss.secretNamespace | default .Release.Namespace }}
secretName: {{ $ss.secretName | default "profilekit-webhook-tls" }}
configurationName: {{ $ss.configurationName | default "profilekit" }}
dnsNames: {{ $ss.dnsNames | default list | toJson }}
{{- end }}

{{/* The page section of the configuration with the host's defaults
(examples/host/internal/hostconfig/page.go): whether the page is on (the
value page.enabled or the configuration), and the port of its address. */}}
{{- define "profilekit.page" -}}
{{- $cfg := include "profilekit.config" . | fromYaml }}
{{- $p := $cfg.page | default dict }}
enabled: {{ $p.enabled | default false }}
port: {{ ($p.address | default ":8082") | toString | splitList ":" | last | default "8082" }}
{{- end }}
