package authpolicy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"
	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/apply"
)

func profile(name, owner string) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: owner}},
	}
}

func load(t *testing.T, yamlText string) *Config {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	def := Definition()
	def.NewConfig = func() any { return newConfig(func(string) string { return "" }) }
	cfg, err := def.DecodeHostDefaults(js)
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	return cfg.(*Config)
}

func binding(name string, ann map[string]string, deleting bool) metav1.PartialObjectMetadata {
	b := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
	if deleting {
		now := metav1.Now()
		b.DeletionTimestamp = &now
	}
	return b
}

func TestContributors(t *testing.T) {
	edit := func(name, user string) metav1.PartialObjectMetadata {
		return binding(name, map[string]string{"user": user, "role": "edit"}, false)
	}
	tests := []struct {
		reason   string
		bindings []metav1.PartialObjectMetadata
		roles    []string
		want     Members
	}{
		{
			reason: "edit and view count, sorted; admin, other roles and unannotated bindings do not",
			bindings: []metav1.PartialObjectMetadata{
				binding("z", map[string]string{"user": "zoe@example.org", "role": "view"}, false),
				binding("a", map[string]string{"user": "al@example.org", "role": "edit"}, false),
				binding("owner", map[string]string{"user": "owner@example.org", "role": "admin"}, false),
				binding("plain", nil, false),
				binding("no-role", map[string]string{"user": "nr@example.org"}, false),
				binding("no-user", map[string]string{"role": "edit"}, false),
			},
			roles: []string{"edit", "view"},
			want:  Members{Users: []string{"al@example.org", "zoe@example.org"}},
		},
		{
			reason: "the owner's namespaceAdmin is never a contributor, even when admin counts: a Group owner's name is no user",
			bindings: []metav1.PartialObjectMetadata{
				binding("namespaceAdmin", map[string]string{"user": "ml-team", "role": "admin"}, false),
				binding("user-al-example-org-clusterrole-admin", map[string]string{"user": "al@example.org", "role": "admin"}, false),
			},
			roles: []string{"admin", "edit"},
			want:  Members{Users: []string{"al@example.org"}},
		},
		{
			reason: "a user with two bindings appears once",
			bindings: []metav1.PartialObjectMetadata{
				binding("e", map[string]string{"user": "al@example.org", "role": "edit"}, false),
				binding("v", map[string]string{"user": "al@example.org", "role": "view"}, false),
			},
			roles: []string{"edit", "view"},
			want:  Members{Users: []string{"al@example.org"}},
		},
		{
			reason:   "a binding being deleted no longer grants access",
			bindings: []metav1.PartialObjectMetadata{binding("e", map[string]string{"user": "al@example.org", "role": "edit"}, true)},
			roles:    []string{"edit"},
		},
		{
			reason:   "the roles that count are configuration",
			bindings: []metav1.PartialObjectMetadata{binding("v", map[string]string{"user": "al@example.org", "role": "view"}, false)},
			roles:    []string{"edit"},
		},
		{
			reason: "the access-management service's names tell the kinds: a user, a group, a service account",
			bindings: []metav1.PartialObjectMetadata{
				edit("user-bob-example-org-clusterrole-edit", "bob@example.org"),
				edit("group-ml-team-clusterrole-edit", "ml-team"),
				binding("group-data-clusterrole-view", map[string]string{"user": "data", "role": "view"}, false),
				edit("serviceaccount-ci-bot-clusterrole-edit", "ci-bot"),
			},
			roles: []string{"edit", "view"},
			want:  Members{Users: []string{"bob@example.org"}, Groups: []string{"data", "ml-team"}},
		},
		{
			reason: "a group's name must match its annotations: any other name is a user, as before",
			bindings: []metav1.PartialObjectMetadata{
				edit("group-ml-team-clusterrole-view", "ml-team"),
				edit("group-other-clusterrole-edit", "ml-team"),
				edit("team-binding", "ml-team"),
				edit("group-ml-team-clusterrole-kubeflow-edit", "ml-team"),
			},
			roles: []string{"edit"},
			want:  Members{Users: []string{"ml-team"}},
		},
		{
			reason:   "a group's punctuation as the access-management service writes it",
			bindings: []metav1.PartialObjectMetadata{edit("group-ml-team-example-org-clusterrole-edit", "ML.Team@example.org")},
			roles:    []string{"edit"},
			want:     Members{Groups: []string{"ML.Team@example.org"}},
		},
		{
			reason:   "a user and a group of the same name stay apart",
			bindings: []metav1.PartialObjectMetadata{edit("user-ml-team-clusterrole-edit", "ml-team"), edit("group-ml-team-clusterrole-edit", "ml-team")},
			roles:    []string{"edit"},
			want:     Members{Users: []string{"ml-team"}, Groups: []string{"ml-team"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Contributors(tc.bindings, tc.roles), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Contributors (-want +got):\n%s", diff)
			}
		})
	}
}

const gateway = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"

func usersRule(header string, users ...string) *securityv1beta1.Rule {
	return &securityv1beta1.Rule{
		From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{gateway}}}},
		When: []*securityv1beta1.Condition{{Key: "request.headers[" + header + "]", Values: users}},
	}
}

func sameNamespace(ns string) *securityv1beta1.Rule {
	return &securityv1beta1.Rule{From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Namespaces: []string{ns}}}}}
}

func notebookController(ns string) *securityv1beta1.Rule {
	return &securityv1beta1.Rule{
		From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{"cluster.local/ns/kubeflow/sa/notebook-controller-service-account"}}}},
		To:   []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Paths: []string{"/notebook/" + ns + "/*"}}}},
	}
}

func TestAccessSpec(t *testing.T) {
	tests := []struct {
		reason       string
		config       string
		owner        string
		contributors []string
		want         *securityv1beta1.AuthorizationPolicy
	}{
		{
			reason:       "defaults: owner and contributors through the gateway only, the namespace, the notebook controller",
			owner:        "owner@example.org",
			contributors: []string{"al@example.org", "zoe@example.org"},
			want: &securityv1beta1.AuthorizationPolicy{Rules: []*securityv1beta1.Rule{
				usersRule("kubeflow-userid", "al@example.org", "owner@example.org", "zoe@example.org"),
				sameNamespace("team-a"),
				notebookController("team-a"),
			}},
		},
		{
			reason:       "the prefix and header are configuration; an owner who is also a contributor appears once",
			config:       "{userIDHeader: x-user, userIDPrefix: 'accounts.google.com:'}",
			owner:        "owner@example.org",
			contributors: []string{"owner@example.org"},
			want: &securityv1beta1.AuthorizationPolicy{Rules: []*securityv1beta1.Rule{
				usersRule("x-user", "accounts.google.com:owner@example.org"),
				sameNamespace("team-a"),
				notebookController("team-a"),
			}},
		},
		{
			reason: "probe paths are open to GET and HEAD; several gateways",
			config: "{probePaths: [/healthz, '/notebook/{{ .Namespace }}/ready'], gatewayPrincipals: [a, b], sameNamespace: false, notebookController: {principals: []}}",
			owner:  "owner@example.org",
			want: &securityv1beta1.AuthorizationPolicy{Rules: []*securityv1beta1.Rule{
				{
					From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{"a", "b"}}}},
					When: []*securityv1beta1.Condition{{Key: "request.headers[kubeflow-userid]", Values: []string{"owner@example.org"}}},
				},
				{To: []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Methods: []string{"GET", "HEAD"}, Paths: []string{"/healthz", "/notebook/team-a/ready"}}}}},
			}},
		},
		{
			reason: "no owner and no contributors: no user rule rather than one with no values",
			owner:  "",
			want: &securityv1beta1.AuthorizationPolicy{Rules: []*securityv1beta1.Rule{
				sameNamespace("team-a"),
				notebookController("team-a"),
			}},
		},
		{
			reason: "a notebook controller on every path: its rule has no operation, rather than one that names no path",
			config: "{sameNamespace: false, notebookController: {principals: [nb], paths: []}}",
			want: &securityv1beta1.AuthorizationPolicy{Rules: []*securityv1beta1.Rule{
				{From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{"nb"}}}}},
			}},
		},
		{
			reason: "nothing to allow: no policy at all, since an ALLOW policy without rules denies everything",
			config: "{sameNamespace: false, notebookController: {principals: []}}",
			want:   nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg := load(t, tc.config)
			got, err := AccessSpec(cfg, profile("team-a", tc.owner), Members{Users: tc.contributors})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("AccessSpec (-want +got):\n%s", diff)
			}
		})
	}
}

const protectedB = `
policies:
- name: deny-protected-b-transfers
  action: DENY
  selector: {data.example.ca/classification: protected-b}
  rules:
  - to:
    - operation:
        paths: ["/notebook/{{ .Namespace }}/*/files/*", "/notebook/{{ .Namespace }}/*/api/contents/*"]
        methods: [GET, PUT, POST]
`

func TestBuild(t *testing.T) {
	tests := []struct {
		reason string
		config string
		want   map[string]any
	}{
		{
			reason: "the access policy is ALLOW (Istio's default, so the action is left out) and named by the host",
			config: "{name: team-access, notebookController: {principals: []}, sameNamespace: false}",
			want: map[string]any{
				"team-access": map[string]any{
					"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
					"metadata": map[string]any{"name": "team-access", "namespace": "team-a"},
					"spec": map[string]any{"rules": []any{map[string]any{
						"from": []any{map[string]any{"source": map[string]any{"principals": []any{gateway}}}},
						"when": []any{map[string]any{"key": "request.headers[kubeflow-userid]", "values": []any{"owner@example.org"}}},
					}}},
				},
			},
		},
		{
			reason: "a further DENY policy with a selector and placeholders",
			config: strings.Replace(protectedB, "policies:", "{name: team-access}\npolicies:", 1),
			want: map[string]any{
				"deny-protected-b-transfers": map[string]any{
					"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
					"metadata": map[string]any{"name": "deny-protected-b-transfers", "namespace": "team-a"},
					"spec": map[string]any{
						"action":   "DENY",
						"selector": map[string]any{"matchLabels": map[string]any{"data.example.ca/classification": "protected-b"}},
						"rules": []any{map[string]any{"to": []any{map[string]any{"operation": map[string]any{
							"paths":   []any{"/notebook/team-a/*/files/*", "/notebook/team-a/*/api/contents/*"},
							"methods": []any{"GET", "PUT", "POST"},
						}}}}},
					},
				},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg := load(t, strings.Replace(tc.config, "{name: team-access}\n", "name: team-access\n", 1))
			got := map[string]any{}
			policies, err := Build(cfg, profile("team-a", "owner@example.org"), Members{})
			if err != nil {
				t.Fatal(err)
			}
			for _, ac := range policies {
				data, err := json.Marshal(apply.Encoded(ac))
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatal(err)
				}
				got[*ac.Name] = m
			}
			for name := range got {
				if _, ok := tc.want[name]; !ok {
					delete(got, name) // the other policy of the pair; its own case covers it
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("encoded policies (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPolicySpecSelector(t *testing.T) {
	pol := Policy{Name: "p", Action: "ALLOW", Selector: map[string]string{"owner": "{{ .Profile }}"}, Rules: []Rule{{From: []From{{Source: Source{Namespaces: []string{"{{.Namespace}}"}}}}}}}
	want := &securityv1beta1.AuthorizationPolicy{
		Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"owner": "team-a"}},
		Rules:    []*securityv1beta1.Rule{sameNamespace("team-a")},
	}
	if diff := cmp.Diff(want, PolicySpec(pol, profile("team-a", "")), protocmp.Transform()); diff != "" {
		t.Errorf("PolicySpec (-want +got):\n%s", diff)
	}
	// No selector: the namespace's every workload, with no selector
	// written rather than one that matches no label.
	pol.Selector = nil
	want.Selector = nil
	if diff := cmp.Diff(want, PolicySpec(pol, profile("team-a", "")), protocmp.Transform()); diff != "" {
		t.Errorf("PolicySpec without a selector (-want +got):\n%s", diff)
	}
}

func TestContributorProfile(t *testing.T) {
	tests := []struct {
		reason string
		ann    map[string]string
		want   []string
	}{
		{"a contributor binding wakes its namespace's Profile", map[string]string{"user": "al@example.org", "role": "edit"}, []string{"team-a"}},
		{"any binding with a user, whatever its role, since the role may just have changed", map[string]string{"user": "al@example.org", "role": "admin"}, []string{"team-a"}},
		{"other bindings wake nothing", map[string]string{"note": "x"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "team-a", Annotations: tc.ann}}
			if diff := cmp.Diff(tc.want, contributorProfile(t.Context(), o)); diff != "" {
				t.Errorf("contributorProfile (-want +got):\n%s", diff)
			}
		})
	}
	admin := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "namespaceAdmin", Namespace: "team-a",
		Annotations: map[string]string{"user": "owner@example.org", "role": "admin"}}}
	if got := contributorProfile(t.Context(), admin); got != nil {
		t.Errorf("the owner's namespaceAdmin, which Contributors leaves out, wakes %v", got)
	}
}
