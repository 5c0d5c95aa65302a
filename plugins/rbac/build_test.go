package rbac_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/rbac"
)

func profile(name string, labels map[string]string, owner string) *kubeflowv1.Profile {
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if owner != "" {
		p.Spec.Owner = rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: owner}
	}
	return p
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func sa(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

func TestSubjects(t *testing.T) {
	tests := []struct {
		reason  string
		in      []rbac.Subject
		p       *kubeflowv1.Profile
		want    []rbacv1.Subject
		wantErr string
	}{{
		reason: "a service account without a namespace lives in the Profile's namespace",
		in:     []rbac.Subject{{Kind: "ServiceAccount", Name: "default-editor"}},
		p:      profile("team-a", nil, ""),
		want:   []rbacv1.Subject{sa("team-a", "default-editor")},
	}, {
		reason: "placeholders are filled in names and namespaces",
		in: []rbac.Subject{
			{Kind: "User", Name: "{{ .Owner }}"},
			{Kind: "ServiceAccount", Name: "{{ .Namespace }}-runner", Namespace: "{{ .Namespace }}"},
		},
		p:    profile("team-a", nil, "alice@example.org"),
		want: []rbacv1.Subject{sa("team-a", "team-a-runner"), user("alice@example.org")},
	}, {
		reason: "subjects are sorted by kind, namespace and name, and duplicates dropped",
		in: []rbac.Subject{
			{Kind: "User", Name: "zoe"},
			{Kind: "Group", Name: "b"},
			{Kind: "ServiceAccount", Name: "x", Namespace: "other"},
			{Kind: "User", Name: "adam"},
			{Kind: "Group", Name: "a"},
			{Kind: "ServiceAccount", Name: "x"},
			{Kind: "User", Name: "{{ .Owner }}"},
		},
		p: profile("team-a", nil, "adam"),
		want: []rbacv1.Subject{
			group("a"), group("b"),
			sa("other", "x"), sa("team-a", "x"),
			user("adam"), user("zoe"),
		},
	}, {
		reason:  "{{ .Owner }} needs an owner",
		in:      []rbac.Subject{{Kind: "User", Name: "{{ .Owner }}"}},
		p:       profile("team-a", nil, ""),
		wantErr: `subjects[0]: "{{ .Owner }}" uses {{ .Owner }} but the Profile has no spec.owner`,
	}, {
		reason:  "a service account name that is invalid once filled in is an error",
		in:      []rbac.Subject{{Kind: "ServiceAccount", Name: "sa-{{ .Owner }}"}},
		p:       profile("team-a", nil, "alice@example.org"),
		wantErr: `subjects[0]: service account name "sa-alice@example.org"`,
	}}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := rbac.Subjects(tc.in, tc.p)
			if !errorContains(err, tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" && tc.wantErr == "" {
				t.Errorf("subjects (-want +got):\n%s", diff)
			}
		})
	}
}

func errorContains(err error, want string) bool {
	if want == "" {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), want)
}

func binding(ns, name string, ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1ac.RoleBindingApplyConfiguration {
	rb := rbacv1ac.RoleBinding(name, ns).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(ref.APIGroup).WithKind(ref.Kind).WithName(ref.Name))
	for _, s := range subjects {
		sac := rbacv1ac.Subject().WithKind(s.Kind).WithName(s.Name)
		if s.APIGroup != "" {
			sac.WithAPIGroup(s.APIGroup)
		}
		if s.Namespace != "" {
			sac.WithNamespace(s.Namespace)
		}
		rb.WithSubjects(sac)
	}
	return rb
}

func clusterRole(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

func TestBuild(t *testing.T) {
	support := rbac.Binding{
		Name:     "support-view",
		RoleRef:  rbac.RoleRef{Kind: "ClusterRole", Name: "view"},
		Subjects: []rbac.Subject{{Kind: "Group", Name: "support"}},
	}
	pipelines := rbac.Binding{
		Name:            "pipeline-runner",
		RoleRef:         rbac.RoleRef{Kind: "ClusterRole", Name: "kubeflow-edit"},
		Subjects:        []rbac.Subject{{Kind: "ServiceAccount", Name: "default-editor"}},
		ProfileSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pipelines": "on"}},
	}
	logs := rbac.Role{
		Name:  "pod-logs",
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}}},
	}
	logsRole := rbacv1ac.Role("pod-logs", "team-a").WithRules(rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("pods/log").WithVerbs("get"))
	tests := []struct {
		reason  string
		cfg     rbac.Config
		p       *kubeflowv1.Profile
		want    rbac.Objects
		wantErr string
	}{{
		reason: "no configuration, no objects",
		p:      profile("team-a", nil, ""),
	}, {
		reason: "a binding without a selector applies to every Profile; one with a selector only where it matches",
		cfg:    rbac.Config{Bindings: []rbac.Binding{support, pipelines}},
		p:      profile("team-a", map[string]string{"pipelines": "off"}, ""),
		want:   rbac.Objects{Bindings: []*rbacv1ac.RoleBindingApplyConfiguration{binding("team-a", "support-view", clusterRole("view"), group("support"))}},
	}, {
		reason: "the pipelines binding applies where the Profile's label matches",
		cfg:    rbac.Config{Bindings: []rbac.Binding{support, pipelines}},
		p:      profile("team-a", map[string]string{"pipelines": "on"}, ""),
		want: rbac.Objects{Bindings: []*rbacv1ac.RoleBindingApplyConfiguration{
			binding("team-a", "support-view", clusterRole("view"), group("support")),
			binding("team-a", "pipeline-runner", clusterRole("kubeflow-edit"), sa("team-a", "default-editor")),
		}},
	}, {
		reason: "roles and the Profile's extra bindings come with the host's",
		cfg: rbac.Config{
			Roles:         []rbac.Role{logs},
			Bindings:      []rbac.Binding{support},
			ExtraBindings: []rbac.Binding{{Name: "team-logs", RoleRef: rbac.RoleRef{Kind: "Role", Name: "pod-logs"}, Subjects: []rbac.Subject{{Kind: "User", Name: "{{ .Owner }}"}}}},
		},
		p: profile("team-a", nil, "alice@example.org"),
		want: rbac.Objects{
			Roles: []*rbacv1ac.RoleApplyConfiguration{logsRole},
			Bindings: []*rbacv1ac.RoleBindingApplyConfiguration{
				binding("team-a", "support-view", clusterRole("view"), group("support")),
				binding("team-a", "team-logs", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-logs"}, user("alice@example.org")),
			},
		},
	}, {
		reason:  "a placeholder the Profile cannot fill is a terminal InvalidSpec naming the binding",
		cfg:     rbac.Config{Bindings: []rbac.Binding{{Name: "owner-edit", RoleRef: rbac.RoleRef{Kind: "ClusterRole", Name: "edit"}, Subjects: []rbac.Subject{{Kind: "User", Name: "{{ .Owner }}"}}}}},
		p:       profile("team-a", nil, ""),
		wantErr: "binding owner-edit: subjects[0]",
	}}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := rbac.Build(&tc.cfg, tc.p)
			if !errorContains(err, tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if err != nil && plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
				t.Errorf("reason = %q, want %s", plugins.ReasonOf(err, ""), plugins.ReasonInvalidSpec)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := rbac.Binding{Name: "b", RoleRef: rbac.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbac.Subject{{Kind: "Group", Name: "g"}}}
	with := func(f func(*rbac.Binding)) rbac.Binding {
		b := ok
		b.Subjects = append([]rbac.Subject(nil), ok.Subjects...)
		f(&b)
		return b
	}
	tests := []struct {
		reason  string
		cfg     rbac.Config
		wantErr string
	}{{
		reason: "an empty config is valid",
	}, {
		reason: "a plain binding is valid",
		cfg:    rbac.Config{Bindings: []rbac.Binding{ok}},
	}, {
		reason:  "upstream's names are refused",
		cfg:     rbac.Config{Bindings: []rbac.Binding{with(func(b *rbac.Binding) { b.Name = "namespaceAdmin" })}},
		wantErr: `bindings[0]: name "namespaceAdmin"`,
	}, {
		reason:  "default-editor is upstream's too",
		cfg:     rbac.Config{Bindings: []rbac.Binding{with(func(b *rbac.Binding) { b.Name = "default-editor" })}},
		wantErr: "belongs to the upstream profile controller",
	}, {
		reason:  "names are unique across host and Profile bindings",
		cfg:     rbac.Config{Bindings: []rbac.Binding{ok}, ExtraBindings: []rbac.Binding{ok}, AllowedRoles: []rbac.RoleRef{ok.RoleRef}},
		wantErr: `extraBindings[0]: name "b" is also used by bindings[0]`,
	}, {
		reason:  "an extra binding must refer to an allowed role",
		cfg:     rbac.Config{ExtraBindings: []rbac.Binding{ok}, AllowedRoles: []rbac.RoleRef{{Kind: "ClusterRole", Name: "edit"}}},
		wantErr: `extraBindings[0]: ClusterRole "view" is not among the allowed roles`,
	}, {
		reason: "an extra binding to an allowed role is valid",
		cfg:    rbac.Config{ExtraBindings: []rbac.Binding{ok}, AllowedRoles: []rbac.RoleRef{{Kind: "ClusterRole", Name: "view"}}},
	}, {
		reason:  "a roleRef is a ClusterRole or a Role",
		cfg:     rbac.Config{Bindings: []rbac.Binding{with(func(b *rbac.Binding) { b.RoleRef.Kind = "Group" })}},
		wantErr: `bindings[0].roleRef: kind "Group" is neither ClusterRole nor Role`,
	}, {
		reason:  "unknown placeholders are refused at load",
		cfg:     rbac.Config{Bindings: []rbac.Binding{with(func(b *rbac.Binding) { b.Subjects[0].Name = "{{ .User }}" })}},
		wantErr: "unknown placeholder {{ .User }}",
	}, {
		reason:  "single braces are not a placeholder",
		cfg:     rbac.Config{Bindings: []rbac.Binding{with(func(b *rbac.Binding) { b.Subjects[0].Name = "{owner}" })}},
		wantErr: "braces outside a placeholder",
	}, {
		reason:  "an unmatched brace is refused",
		cfg:     rbac.Config{Bindings: []rbac.Binding{with(func(b *rbac.Binding) { b.Subjects[0].Name = "{{ .Namespace }" })}},
		wantErr: "braces outside a placeholder",
	}, {
		reason:  "users and groups have no namespace",
		cfg:     rbac.Config{Bindings: []rbac.Binding{with(func(b *rbac.Binding) { b.Subjects[0].Namespace = "x" })}},
		wantErr: "a Group has no namespace",
	}, {
		reason:  "a literal service account name is checked at load",
		cfg:     rbac.Config{Bindings: []rbac.Binding{with(func(b *rbac.Binding) { b.Subjects[0] = rbac.Subject{Kind: "ServiceAccount", Name: "Bad_Name"} })}},
		wantErr: `service account name "Bad_Name"`,
	}, {
		reason:  "a binding needs subjects",
		cfg:     rbac.Config{Bindings: []rbac.Binding{with(func(b *rbac.Binding) { b.Subjects = nil })}},
		wantErr: "bindings[0]: no subjects",
	}, {
		reason: "an invalid profileSelector is refused",
		cfg: rbac.Config{Bindings: []rbac.Binding{with(func(b *rbac.Binding) {
			b.ProfileSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "not valid!"}}
		})}},
		wantErr: "bindings[0].profileSelector",
	}, {
		reason:  "a Role cannot hold nonResourceURLs",
		cfg:     rbac.Config{Roles: []rbac.Role{{Name: "r", Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}}}}},
		wantErr: "roles[0].rules[0]: a namespaced Role cannot hold nonResourceURLs",
	}}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			err := tc.cfg.Validate()
			if !errorContains(err, tc.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestDecodeProfileSpec(t *testing.T) {
	defaults := []byte(`{"allowedRoles":[{"kind":"ClusterRole","name":"kubeflow-view"}]}`)
	tests := []struct {
		reason  string
		spec    string
		wantErr string
	}{{
		reason: "a Profile may bind an allowed role",
		spec:   `{"extraBindings":[{"name":"viewers","roleRef":{"kind":"ClusterRole","name":"kubeflow-view"},"subjects":[{"kind":"Group","name":"g"}]}]}`,
	}, {
		reason:  "a Profile may not bind any other role",
		spec:    `{"extraBindings":[{"name":"admins","roleRef":{"kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"Group","name":"g"}]}]}`,
		wantErr: `ClusterRole "cluster-admin" is not among the allowed roles`,
	}, {
		reason:  "a Profile may not set the host's bindings",
		spec:    `{"bindings":[]}`,
		wantErr: `field "bindings" is set by the host only`,
	}, {
		reason:  "a Profile may not widen the allowed roles",
		spec:    `{"allowedRoles":[{"kind":"ClusterRole","name":"cluster-admin"}]}`,
		wantErr: `field "allowedRoles" is set by the host only`,
	}, {
		reason:  "unknown fields are refused",
		spec:    `{"extraBindings":[{"name":"x","roleRef":{"kind":"ClusterRole","name":"kubeflow-view"},"subjects":[{"kind":"Group","name":"g"}],"colour":"red"}]}`,
		wantErr: "colour",
	}}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			p := profile("team-a", nil, "")
			p.Spec.Plugins = []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: rbac.Kind}, Spec: &runtime.RawExtension{Raw: json.RawMessage(tc.spec)}}}
			_, err := rbac.Definition().Decode(defaults, p)
			if !errorContains(err, tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if err != nil && plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
				t.Errorf("reason = %q, want %s", plugins.ReasonOf(err, ""), plugins.ReasonInvalidSpec)
			}
		})
	}
}
