package templates_test

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins/plugintest"
	"github.com/profilekit/profilekit/plugins/templates"
)

// scenarioDefaults offer a ConfigMap to every Profile, a ServiceMonitor to
// the Profiles of a team, and a Role and a binding of it (a grant the
// harness watches) to those that opt in.
const scenarioDefaults = `
templates:
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: profile-settings}, data: {owner: '{{ .OwnerKind }}:{{ .Owner }}'}}
- name: metrics
  profileSelector: {matchExpressions: [{key: example.org/team, operator: Exists}]}
  object:
    apiVersion: monitoring.coreos.com/v1
    kind: ServiceMonitor
    metadata: {name: profile-metrics, labels: {example.org/team: '{{ .Label "example.org/team" }}'}}
    spec: {selector: {matchLabels: {app: metrics}}, endpoints: [{port: metrics}]}
- name: reader
  optIn: true
  object: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: pod-reader}, rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]}
- name: reader-binding
  optIn: true
  object:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata: {name: pod-readers}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
    subjects: [{kind: Group, name: '{{ .Namespace }}-readers'}]
`

// changedDefaults are scenarioDefaults after the host changes the
// settings template and the ServiceMonitor's endpoint.
const changedDefaults = `
templates:
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: profile-settings}, data: {owner: '{{ .Owner }}', namespace: '{{ .Namespace }}'}}
- name: metrics
  profileSelector: {matchExpressions: [{key: example.org/team, operator: Exists}]}
  object:
    apiVersion: monitoring.coreos.com/v1
    kind: ServiceMonitor
    metadata: {name: profile-metrics, labels: {example.org/team: '{{ .Label "example.org/team" }}'}}
    spec: {selector: {matchLabels: {app: metrics}}, endpoints: [{port: metrics, interval: 1m}]}
- name: reader
  optIn: true
  object: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: pod-reader}, rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]}
- name: reader-binding
  optIn: true
  object:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata: {name: pod-readers}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
    subjects: [{kind: Group, name: '{{ .Namespace }}-readers'}]
`

// userConfigMap is a ConfigMap the namespace's users made themselves.
const userConfigMap = "my-settings"

// scenario is the templates plugin for one Profile: it opts into the Role,
// gets a team label (and the ServiceMonitor) and opts into the binding
// too, the host changes two templates, the Profile opts out of both and
// leaves the team, opts in again, and is deleted. The users' ConfigMap
// beside ours must be neither adopted nor deleted.
func scenario(t *testing.T) plugintest.Scenario {
	defaults := defaultsJSON(t, scenarioDefaults)
	def, err := templates.Definition().ForHost(hostConfig(t, scenarioDefaults))
	if err != nil {
		t.Fatal(err)
	}
	return plugintest.Scenario{
		Def:      def,
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "opt in", Spec: map[string]any{"enable": []string{"reader"}}},
			{Name: "change: a team, and the binding too", Labels: map[string]string{teamLabel: "data"}, Spec: map[string]any{"enable": []string{"reader", "reader-binding"}}},
			{Name: "the host changes two templates", Defaults: defaultsJSON(t, changedDefaults), Spec: map[string]any{"enable": []string{"reader", "reader-binding"}}},
			{Name: "opt out, and leave the team", Labels: map[string]string{}, Spec: map[string]any{"enable": []string{}}},
			{Name: "add again", Spec: map[string]any{"enable": []string{"reader", "reader-binding"}}},
			{Name: "delete the Profile", Delete: true},
		},
		Retained: []string{"users' ConfigMap"}, // not the plugin's to take
		Setup: func(ctx context.Context, c client.Client, namespace string) error {
			cm := &corev1.ConfigMap{Data: map[string]string{"theme": "dark"}}
			cm.Namespace, cm.Name = namespace, userConfigMap
			return c.Create(ctx, cm)
		},
		Observe: func(ctx context.Context, namespace string) (map[string]string, error) {
			var cm corev1.ConfigMap
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: userConfigMap}, &cm); err != nil {
				return nil, err
			}
			b, err := json.Marshal(map[string]any{"labels": cm.Labels, "data": cm.Data})
			return map[string]string{"users' ConfigMap": string(b)}, err
		},
	}
}

// TestTemplatesSurvivesEveryPerturbation runs every crash, stale and
// unobserved plan of the scenario; the plugin calls no outside system.
func TestTemplatesSurvivesEveryPerturbation(t *testing.T) {
	plugintest.Harness{Client: env.Client}.Survives(t, scenario, plugintest.ClusterPatterns...)
}
