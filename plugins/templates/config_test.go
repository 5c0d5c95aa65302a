package templates_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/templates"
)

// defaultsJSON turns host defaults written in YAML into the JSON a host
// passes on.
func defaultsJSON(t *testing.T, y string) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	return j
}

// hostConfig decodes host defaults written in YAML as a host does.
func hostConfig(t *testing.T, y string) *templates.Config {
	t.Helper()
	cfg, err := templates.Definition().DecodeHostDefaults(defaultsJSON(t, y))
	if err != nil {
		t.Fatalf("host defaults: %v", err)
	}
	return cfg.(*templates.Config)
}

// roleTemplate is a template of a Role named name, as YAML.
func roleTemplate(name, extra string) string {
	return `
- name: ` + name + extra + `
  object:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: Role
    metadata: {name: ` + name + `}
    rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]`
}

// rbacNamed is a template of a Role named name.
func rbacNamed(name string) string {
	return `
templates:
- name: long
  object: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: ` + name + `}, rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]}`
}

func TestValidate(t *testing.T) {
	tests := []struct {
		reason  string
		yaml    string
		wantErr string // "" when the defaults are valid
	}{
		{reason: "a mapping", yaml: "templates:" + roleTemplate("reader", "")},
		{reason: "a string of YAML, as a manifest is pasted", yaml: `
templates:
- name: settings
  object: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: settings
    data: {owner: "{{ .Owner }}", rule: "{{ $labels.pod }} is down"}`},
		{reason: "a string of YAML that begins with a comment and a separator, as files often do", yaml: `
templates:
- name: settings
  object: "# settings\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"`},
		{reason: "a string of comments alone", yaml: `
templates:
- name: settings
  object: "# settings\n---\n# to come\n"`, wantErr: "holds 0 YAML documents, want one object"},
		{reason: "a string that is not YAML", yaml: `
templates:
- name: settings
  object: "apiVersion: v1\nkind: [ConfigMap"`, wantErr: "not valid YAML"},
		{reason: "a string of two documents", yaml: `
templates:
- name: settings
  object: "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Secret\n"`, wantErr: "holds 2 YAML documents, want one object"},
		{reason: "a duplicate key in a string of YAML", yaml: `
templates:
- name: settings
  object: "apiVersion: v1\nkind: ConfigMap\nkind: Secret\n"`, wantErr: "not valid YAML"},
		{reason: "no object", yaml: "templates: [{name: empty}]", wantErr: "templates[0].object: required"},
		{reason: "an empty object", yaml: "templates: [{name: empty, object: {}}]", wantErr: "want a Kubernetes object, got nothing"},
		{reason: "no apiVersion", yaml: `
templates:
- name: settings
  object: {kind: ConfigMap, metadata: {name: settings}}`, wantErr: `templates[0].object: apiVersion "": want group/version`},
		{reason: "no kind", yaml: `
templates:
- name: settings
  object: {apiVersion: v1, metadata: {name: settings}}`, wantErr: `kind ""`},
		{reason: "no name", yaml: `
templates:
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {labels: {a: b}}}`, wantErr: "templates[0].object.metadata.name: required"},
		{reason: "a placeholder in the kind", yaml: `
templates:
- name: settings
  object: {apiVersion: v1, kind: "{{ .Profile }}", metadata: {name: settings}}`, wantErr: "apiVersion and kind take no placeholders"},
		{reason: "a namespace of its own", yaml: `
templates:
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: kube-system}}`, wantErr: "templates[0].object.metadata.namespace: leave it out"},
		{reason: "metadata beyond name, labels and annotations", yaml: `
templates:
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, ownerReferences: []}}`, wantErr: "metadata.ownerReferences: a template's metadata holds name, labels, annotations only"},
		{reason: "a status", yaml: `
templates:
- name: monitor
  object: {apiVersion: monitoring.coreos.com/v1, kind: ServiceMonitor, metadata: {name: m}, status: {ready: true}}`, wantErr: "templates[0].object.status: leave it out"},
		{reason: "an unknown placeholder", yaml: `
templates:
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {ns: "{{ .Namspace }}"}}`, wantErr: "templates[0].object.data.ns: \"{{ .Namspace }}\": unknown placeholder"},
		{reason: "a label key that is not one", yaml: `
templates:
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, labels: {"a b": x}}}`, wantErr: `key "a b"`},
		{reason: "one of profilekit's label keys", yaml: `
templates:
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, labels: {profilekit.dev/role: outside-state}}}`, wantErr: `key "profilekit.dev/role" is profilekit's own`},
		{reason: "a ConfigMap named like a record", yaml: `
templates:
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "profilekit-{{ .Namespace }}"}}`, wantErr: "names that start with profilekit- are profilekit's records"},
		{reason: "a denied kind", yaml: `
templates:
- name: quota
  object: {apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {pods: "1"}}}`, wantErr: "kind ResourceQuota is on the host's deny list"},
		{reason: "a kind the host denies besides the defaults", yaml: `
deniedKinds: [Namespace, NetworkPolicy.networking.k8s.io]
templates:
- name: policy
  object: {apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: p}, spec: {podSelector: {}}}`, wantErr: "kind NetworkPolicy.networking.k8s.io is on the host's deny list"},
		{reason: "a kind the host takes off the deny list", yaml: `
deniedKinds: [Namespace]
templates:
- name: quota
  object: {apiVersion: v1, kind: ResourceQuota, metadata: {name: q}}`},
		{reason: "a well-known cluster-scoped kind", yaml: `
templates:
- name: role
  object: {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: r}}`, wantErr: "kind ClusterRole.rbac.authorization.k8s.io is cluster-scoped"},
		{reason: "a binding of a denied role", yaml: `
templates:
- name: admins
  object:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata: {name: admins}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
    subjects: [{kind: Group, name: ops}]`, wantErr: `RoleBinding grants role "cluster-admin", which the host denies`},
		{reason: "a cluster-wide binding of a denied role: both reasons", yaml: `
templates:
- name: admins
  object:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    metadata: {name: admins}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
    subjects: [{kind: Group, name: ops}]`, wantErr: "kind ClusterRoleBinding.rbac.authorization.k8s.io is cluster-scoped: templates make objects in Profiles' namespaces only\n" +
			`ClusterRoleBinding grants role "cluster-admin", which the host denies`},
		{reason: "a Role's name of the longest length", yaml: rbacNamed(strings.Repeat("r", 253))},
		{reason: "a Role's name one longer", yaml: rbacNamed(strings.Repeat("r", 254)), wantErr: "must be 1 to 253 characters"},
		{reason: "a binding of a role the host allows", yaml: `
templates:
- name: viewers
  object:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata: {name: viewers}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
    subjects: [{kind: Group, name: "{{ .Namespace }}-viewers"}]`},
		{reason: "an upstream name", yaml: `
templates:
- name: editor
  object: {apiVersion: v1, kind: ServiceAccount, metadata: {name: default-editor}}`, wantErr: `name "default-editor" belongs to the upstream profile controller`},
		{reason: "a name that is not valid", yaml: `
templates:
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: Settings}}`, wantErr: `name "Settings"`},
		{reason: "two templates of one name", yaml: "templates:" + roleTemplate("reader", "") + roleTemplate("reader", ""), wantErr: `templates[1]: name "reader" is also used by templates[0]`},
		{reason: "two templates of one object", yaml: "templates:" + roleTemplate("reader", "") + strings.Replace(roleTemplate("reader", ""), "- name: reader", "- name: other", 1), wantErr: "templates[1]: Role reader is also made by templates[0]"},
		{reason: "a selector that does not parse", yaml: "templates:" + roleTemplate("reader", "\n  profileSelector: {matchExpressions: [{key: a, operator: Bad}]}"), wantErr: "templates[0]: profileSelector"},
		{reason: "a retired kind that is not one", yaml: "retiredKinds: [{apiVersion: 'a/b/c', kind: Widget}]", wantErr: "retiredKinds[0]: apiVersion"},
		{reason: "enable of a template there is not", yaml: "templates:" + roleTemplate("reader", "\n  optIn: true") + "\nenable: [writer]", wantErr: `enable[0]: "writer": no such template; the host offers reader`},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			_, err := templates.Definition().DecodeHostDefaults(defaultsJSON(t, tt.yaml))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("DecodeHostDefaults: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("DecodeHostDefaults error = %v, want %q", err, tt.wantErr)
			}
			if plugins.ReasonOf(err, "") != plugins.ReasonInvalidConfig {
				t.Errorf("reason = %s, want %s", plugins.ReasonOf(err, ""), plugins.ReasonInvalidConfig)
			}
		})
	}
}

// The kinds a host watches and prunes for the plugin are its templates'
// and its retired kinds, each once.
func TestOwnedKinds(t *testing.T) {
	cfg := hostConfig(t, `
retiredKinds: [{apiVersion: monitoring.coreos.com/v1, kind: PodMonitor}, {apiVersion: rbac.authorization.k8s.io/v1, kind: Role}]
templates:`+roleTemplate("reader", "")+roleTemplate("writer", "")+`
- name: settings
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}}`)
	def, err := templates.Definition().ForHost(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"},
		{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	}
	if diff := cmp.Diff(want, def.Owns); diff != "" {
		t.Errorf("Owns (-want +got):\n%s", diff)
	}
}

// A Profile names opt-in templates and nothing else: the templates and
// the deny lists are the host's.
func TestProfileSpec(t *testing.T) {
	defaults := defaultsJSON(t, "templates:"+roleTemplate("reader", "\n  optIn: true"))
	for _, tt := range []struct {
		reason  string
		spec    string
		wantErr string
	}{
		{reason: "opt into a template", spec: `{"enable":["reader"]}`},
		{reason: "a template of its own", spec: `{"templates":[{"name":"mine","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}}]}`, wantErr: `"templates"`},
		{reason: "a deny list of its own", spec: `{"deniedKinds":[]}`, wantErr: `"deniedKinds"`},
		{reason: "a template the host does not have", spec: `{"enable":["writer"]}`, wantErr: `enable[0]: "writer": no such template`},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{{
				TypeMeta: metav1.TypeMeta{Kind: templates.Kind}, Spec: &runtime.RawExtension{Raw: []byte(tt.spec)},
			}}}}
			_, err := templates.Definition().Decode(defaults, p)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
				t.Fatalf("Decode error = %v (%s), want InvalidSpec %q", err, plugins.ReasonOf(err, ""), tt.wantErr)
			}
		})
	}
}

// TestObjectOfNothing: an Object given no bytes at all, as only a direct
// call can give it, is an error, not a panic.
func TestObjectOfNothing(t *testing.T) {
	for _, data := range []string{"", "  \n"} {
		var o templates.Object
		if err := o.UnmarshalJSON([]byte(data)); err == nil || !strings.Contains(err.Error(), "want a Kubernetes object") {
			t.Errorf("UnmarshalJSON(%q) = %v, want an error that asks for an object", data, err)
		}
	}
}
