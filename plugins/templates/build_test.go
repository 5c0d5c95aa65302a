package templates_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/templates"
)

var (
	configMapKind = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	roleKind      = rbacv1.SchemeGroupVersion.WithKind("Role")
	bindingKind   = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
	monitorKind   = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}
	widgetKind    = schema.GroupVersionKind{Group: "widgets.example.org", Version: "v1", Kind: "Widget"}
	clusterKind   = schema.GroupVersionKind{Group: "widgets.example.org", Version: "v1", Kind: "ClusterWidget"}
)

// testMapper serves what a cluster with the Prometheus Operator and a
// cluster-scoped ClusterWidget serves; not Widget.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{configMapKind, roleKind, bindingKind, monitorKind} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	m.Add(clusterKind, meta.RESTScopeRoot)
	return m
}

// brokenMapper fails every look-up, as discovery does when the API server
// is unreachable.
type brokenMapper struct{ meta.RESTMapper }

func (brokenMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("discovery is down")
}

func testProfile(labels map[string]string) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: labels},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: "User", Name: "alice@example.org"}},
	}
}

// obj is an object as Build renders it into team-a's namespace.
func obj(gvk schema.GroupVersionKind, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetGroupVersionKind(gvk)
	md, _ := u.Object["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		u.Object["metadata"] = md
	}
	md["name"], md["namespace"] = name, "team-a"
	return u
}

func TestBuild(t *testing.T) {
	const settings = `
- name: settings
  object:
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: settings
      labels: {team: '{{ .Label "example.org/team" }}'}
      annotations: {owner: '{{ .OwnerKind }}:{{ .Owner }}'}
    data: {namespace: '{{ .Namespace }}', profile: '{{ .Profile }}', alert: '{{ $labels.pod }} down', count: "3"}`
	const monitor = `
- name: metrics
  profileSelector: {matchLabels: {metrics: "on"}}
  object: {apiVersion: monitoring.coreos.com/v1, kind: ServiceMonitor, metadata: {name: metrics}, spec: {endpoints: [{port: web}]}}`
	const logs = `
- name: logs
  optIn: true
  object: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: logs}, rules: [{apiGroups: [""], resources: [pods/log], verbs: [get]}]}`
	const byTeam = `
- name: by-team
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: '{{ .Label "example.org/team" }}-settings'}}`
	const grant = `
- name: grant
  object:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata: {name: grant}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: '{{ .Label "example.org/role" }}'}
    subjects: [{kind: User, name: '{{ .Owner }}'}]`
	widget := func(kind string) string {
		return "\n- name: widget\n  object: {apiVersion: widgets.example.org/v1, kind: " + kind + ", metadata: {name: w}}"
	}
	team := map[string]string{"example.org/team": "data"}
	settingsObj := obj(configMapKind, "settings", map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"team": "data"}, "annotations": map[string]any{"owner": "User:alice@example.org"}},
		"data":     map[string]any{"namespace": "team-a", "profile": "team-a", "alert": "{{ $labels.pod }} down", "count": "3"},
	})
	monitorObj := obj(monitorKind, "metrics", map[string]any{"spec": map[string]any{"endpoints": []any{map[string]any{"port": "web"}}}})
	logsObj := obj(roleKind, "logs", map[string]any{"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods/log"}, "verbs": []any{"get"}}}})
	rendered := func(name string, u *unstructured.Unstructured) templates.Rendered {
		return templates.Rendered{Template: name, Object: u}
	}
	tests := []struct {
		reason     string
		templates  string
		enable     []string
		labels     map[string]string
		noOwner    bool
		mapper     meta.RESTMapper
		want       []templates.Rendered
		wantHeld   []templates.Held
		holdAll    bool
		wantErr    string // a line of the error; "" for none
		wantReason string // the error's reason; "" for a transient error
	}{
		{reason: "placeholders filled in, other braces written as they are", templates: settings, labels: team, want: []templates.Rendered{rendered("settings", settingsObj)}},
		{reason: "offline every kind counts as served", templates: monitor + widget("Widget"), labels: map[string]string{"metrics": "on"}, mapper: nil,
			want: []templates.Rendered{rendered("metrics", monitorObj), rendered("widget", obj(widgetKind, "w", nil))}},
		{reason: "a selector that matches", templates: monitor, labels: map[string]string{"metrics": "on"}, want: []templates.Rendered{rendered("metrics", monitorObj)}},
		{reason: "a selector that does not match", templates: monitor, labels: map[string]string{"metrics": "off"}},
		{reason: "an opt-in template not named", templates: logs},
		{reason: "an opt-in template named", templates: logs, enable: []string{"logs"}, want: []templates.Rendered{rendered("logs", logsObj)}},
		{reason: "a template named that the Profile's labels do not select: refused, not held", templates: monitor + logs, enable: []string{"metrics", "logs"},
			want: []templates.Rendered{rendered("logs", logsObj)}, wantErr: "template metrics: enable names it, but it is not offered to this Profile", wantReason: plugins.ReasonInvalidSpec},
		{reason: "a label the Profile does not carry, in a value: held by name", templates: settings + logs, enable: []string{"logs"},
			want: []templates.Rendered{rendered("logs", logsObj)}, wantHeld: []templates.Held{{Template: "settings", GVK: configMapKind, Name: "settings"}},
			wantErr: `template settings: ConfigMap team-a/settings: the Profile has no such label, which {{ .Label "example.org/team" }} at object.metadata.labels.team needs`, wantReason: plugins.ReasonInvalidLabel},
		{reason: "a label the Profile does not carry, in the name: nothing pruned", templates: byTeam,
			holdAll: true, wantErr: `template by-team: ConfigMap team-a/{{ .Label "example.org/team" }}-settings: the Profile has no such label`, wantReason: plugins.ReasonInvalidLabel},
		{reason: "a name not valid once filled in: nothing pruned", templates: byTeam, labels: map[string]string{"example.org/team": "Data"},
			holdAll: true, wantErr: `name "Data-settings"`, wantReason: plugins.ReasonInvalidConfig},
		{reason: "a label value not valid once filled in", templates: settings, labels: map[string]string{"example.org/team": "-data"},
			wantHeld: []templates.Held{{Template: "settings", GVK: configMapKind, Name: "settings"}}, wantErr: `label team: value "-data"`, wantReason: plugins.ReasonInvalidConfig},
		{reason: "an owner the Profile does not have", templates: settings, labels: team, noOwner: true,
			wantHeld: []templates.Held{{Template: "settings", GVK: configMapKind, Name: "settings"}}, wantErr: "the Profile has no owner, which {{ .OwnerKind }}", wantReason: plugins.ReasonInvalidSpec},
		{reason: "a denied role, once filled in", templates: grant, labels: map[string]string{"example.org/role": "admin"},
			wantHeld: []templates.Held{{Template: "grant", GVK: bindingKind, Name: "grant"}}, wantErr: `template grant: RoleBinding team-a/grant: RoleBinding grants role "admin", which the host denies`, wantReason: plugins.ReasonInvalidConfig},
		{reason: "an allowed role, once filled in", templates: grant, labels: map[string]string{"example.org/role": "view"}, want: []templates.Rendered{rendered("grant", obj(bindingKind, "grant", map[string]any{
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
			"subjects": []any{map[string]any{"kind": "User", "name": "alice@example.org"}},
		}))}},
		{reason: "a ConfigMap named like a record once filled in", templates: byTeam, labels: map[string]string{"example.org/team": "profilekit"},
			wantHeld: []templates.Held{{Template: "by-team", GVK: configMapKind, Name: "profilekit-settings"}}, wantErr: "names that start with profilekit- are profilekit's records", wantReason: plugins.ReasonInvalidConfig},
		{reason: "a kind the cluster does not serve", templates: widget("Widget") + logs, enable: []string{"logs"}, want: []templates.Rendered{rendered("logs", logsObj)},
			wantHeld: []templates.Held{{Template: "widget", GVK: widgetKind, Name: "w"}}, wantErr: "template widget: Widget team-a/w: the cluster does not serve widgets.example.org/v1 Widget", wantReason: plugins.ReasonInvalidConfig},
		{reason: "a kind the cluster serves cluster-scoped", templates: widget("ClusterWidget"),
			wantHeld: []templates.Held{{Template: "widget", GVK: clusterKind, Name: "w"}}, wantErr: "kind ClusterWidget.widgets.example.org is cluster-scoped", wantReason: plugins.ReasonInvalidConfig},
		{reason: "a look-up that failed: tried again, held meanwhile", templates: logs, enable: []string{"logs"}, mapper: brokenMapper{},
			wantHeld: []templates.Held{{Template: "logs", GVK: roleKind, Name: "logs"}}, wantErr: "template logs: Role team-a/logs: look up rbac.authorization.k8s.io/v1 Role: discovery is down"},
		{reason: "two templates that meet for this Profile: the second refused", templates: `
- name: first
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: data-settings}}` + byTeam, labels: team,
			want:    []templates.Rendered{rendered("first", obj(configMapKind, "data-settings", nil))},
			wantErr: "template by-team: ConfigMap team-a/data-settings is also made by template first", wantReason: plugins.ReasonInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg := hostConfig(t, "templates:"+tt.templates)
			cfg.Enable = tt.enable
			p := testProfile(tt.labels)
			if tt.noOwner {
				p.Spec.Owner = rbacv1.Subject{}
			}
			mapper := tt.mapper
			if mapper == nil && !strings.HasPrefix(tt.reason, "offline") {
				mapper = testMapper()
			}
			plan := templates.Build(cfg, p, mapper)
			if diff := cmp.Diff(tt.want, plan.Objects); diff != "" {
				t.Errorf("Objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantHeld, plan.Held); diff != "" {
				t.Errorf("Held (-want +got):\n%s", diff)
			}
			if plan.HoldAll != tt.holdAll {
				t.Errorf("HoldAll = %v, want %v", plan.HoldAll, tt.holdAll)
			}
			switch {
			case tt.wantErr == "" && plan.Err != nil:
				t.Errorf("Err = %v, want none", plan.Err)
			case tt.wantErr != "" && (plan.Err == nil || !strings.Contains(plan.Err.Error(), tt.wantErr)):
				t.Errorf("Err = %v, want %q", plan.Err, tt.wantErr)
			case tt.wantErr != "" && plugins.IsTerminal(plan.Err) != (tt.wantReason != ""):
				t.Errorf("Err %v: terminal = %v, want %v", plan.Err, plugins.IsTerminal(plan.Err), tt.wantReason != "")
			case tt.wantReason != "" && plugins.ReasonOf(plan.Err, "") != tt.wantReason:
				t.Errorf("Err reason = %s, want %s", plugins.ReasonOf(plan.Err, ""), tt.wantReason)
			}
		})
	}
}
