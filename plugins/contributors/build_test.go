package contributors_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1ac "istio.io/client-go/pkg/applyconfiguration/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/plugins/internal/access"
)

const (
	gatewayPrincipal = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
	pipelinesUI      = "cluster.local/ns/kubeflow/sa/ml-pipeline-ui"
)

// baseConfig is the built-in defaults without the environment's values.
func baseConfig() *contributors.Config {
	return contributors.ConfigFromEnv(func(string) string { return "" })
}

// listing returns a Profile named team-a that lists the plugin second, so
// that messages name spec.plugins[1].
func listing(spec any) *kubeflowv1.Profile {
	raw, _ := json.Marshal(spec)
	return &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: kubeflowv1.ProfileSpec{
			Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "owner@example.org"},
			Plugins: []kubeflowv1.Plugin{
				{TypeMeta: metav1.TypeMeta{Kind: "quotas"}},
				{TypeMeta: metav1.TypeMeta{Kind: contributors.Kind}, Spec: &runtime.RawExtension{Raw: raw}},
			},
		},
	}
}

func wantBinding(name, role string, subject *rbacv1ac.SubjectApplyConfiguration, annotations map[string]string) *rbacv1ac.RoleBindingApplyConfiguration {
	rb := rbacv1ac.RoleBinding(name, "team-a").
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName("kubeflow-" + role)).
		WithSubjects(subject)
	if annotations != nil {
		rb.WithAnnotations(annotations)
	}
	return rb
}

func wantPolicy(name string, annotations map[string]string, rules ...*securityv1beta1.Rule) *securityv1ac.AuthorizationPolicyApplyConfiguration {
	ap := securityv1ac.AuthorizationPolicy(name, "team-a")
	if annotations != nil {
		ap.WithAnnotations(annotations)
	}
	ap.Spec = &securityv1beta1.AuthorizationPolicy{Rules: rules}
	return ap
}

func fromCallers(when ...*securityv1beta1.Condition) *securityv1beta1.Rule {
	return &securityv1beta1.Rule{
		From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{gatewayPrincipal, pipelinesUI}}}},
		When: when,
	}
}

func userSubject(name string) *rbacv1ac.SubjectApplyConfiguration {
	return rbacv1ac.Subject().WithKind("User").WithName(name).WithAPIGroup(rbacv1.GroupName)
}

// TestBuildShapes compares whole objects: the shape KFAM gives a
// contributor, and what groups and service accounts get instead.
func TestBuildShapes(t *testing.T) {
	tests := []struct {
		reason  string
		config  func(*contributors.Config)
		entries []contributors.Contributor
		want    contributors.Objects
		wantErr string
	}{{
		reason:  "a user gets KFAM's binding and policy, annotated user and role, the header rule from the gateway and the pipelines UI",
		entries: []contributors.Contributor{{Kind: "User", Name: "bob@example.org", Role: "edit"}},
		want: contributors.Objects{
			Bindings: []*rbacv1ac.RoleBindingApplyConfiguration{wantBinding("user-bob-example-org-clusterrole-edit", "edit", userSubject("bob@example.org"),
				map[string]string{"user": "bob@example.org", "role": "edit"})},
			Policies: []*securityv1ac.AuthorizationPolicyApplyConfiguration{wantPolicy("user-bob-example-org-clusterrole-edit",
				map[string]string{"user": "bob@example.org", "role": "edit"},
				fromCallers(&securityv1beta1.Condition{Key: "request.headers[kubeflow-userid]", Values: []string{"bob@example.org"}}))},
		},
	}, {
		reason: "the host's header, prefix and principals; a pipelines UI left empty leaves the gateway alone",
		config: func(c *contributors.Config) {
			c.UserIDHeader, c.UserIDPrefix = "x-goog-authenticated-user-email", "accounts.google.com:"
			c.Principals.PipelinesUI = ""
		},
		entries: []contributors.Contributor{{Kind: "User", Name: "bob@example.org", Role: "view"}},
		want: contributors.Objects{
			Bindings: []*rbacv1ac.RoleBindingApplyConfiguration{wantBinding("user-bob-example-org-clusterrole-view", "view", userSubject("bob@example.org"),
				map[string]string{"user": "bob@example.org", "role": "view"})},
			Policies: []*securityv1ac.AuthorizationPolicyApplyConfiguration{wantPolicy("user-bob-example-org-clusterrole-view",
				map[string]string{"user": "bob@example.org", "role": "view"},
				&securityv1beta1.Rule{
					From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{gatewayPrincipal}}}},
					When: []*securityv1beta1.Condition{{Key: "request.headers[x-goog-authenticated-user-email]", Values: []string{"accounts.google.com:bob@example.org"}}},
				})},
		},
	}, {
		reason:  "a group is admitted by the groups header and claim; KFAM's annotations let the dashboard list it (by its subject's kind)",
		config:  func(c *contributors.Config) { c.Groups = access.Groups{Header: "kubeflow-groups", Claim: "groups"} },
		entries: []contributors.Contributor{{Kind: "Group", Name: "team-a-readers", Role: "view"}},
		want: contributors.Objects{
			Bindings: []*rbacv1ac.RoleBindingApplyConfiguration{wantBinding("group-team-a-readers-clusterrole-view", "view",
				rbacv1ac.Subject().WithKind("Group").WithName("team-a-readers").WithAPIGroup(rbacv1.GroupName), map[string]string{"user": "team-a-readers", "role": "view"})},
			Policies: []*securityv1ac.AuthorizationPolicyApplyConfiguration{wantPolicy("group-team-a-readers-clusterrole-view", map[string]string{"user": "team-a-readers", "role": "view"},
				fromCallers(&securityv1beta1.Condition{Key: "request.headers[kubeflow-groups]", Values: []string{"team-a-readers", "team-a-readers,*", "*,team-a-readers"}}),
				fromCallers(&securityv1beta1.Condition{Key: "request.auth.claims[groups]", Values: []string{"team-a-readers"}}),
			)},
		},
	}, {
		reason:  "a group while the host names no groups header or claim: its binding alone, and the condition says so",
		entries: []contributors.Contributor{{Kind: "Group", Name: "team-a-readers", Role: "view"}},
		want: contributors.Objects{
			Bindings: []*rbacv1ac.RoleBindingApplyConfiguration{wantBinding("group-team-a-readers-clusterrole-view", "view",
				rbacv1ac.Subject().WithKind("Group").WithName("team-a-readers").WithAPIGroup(rbacv1.GroupName), map[string]string{"user": "team-a-readers", "role": "view"})},
		},
		wantErr: `spec.plugins[1] (contributors).spec.contributors[0] (Group "team-a-readers", role "view"): granted in RBAC only: the host configures no groups header or claim`,
	}, {
		reason: "a service account gets its binding alone, in the Profile's namespace unless it names one",
		config: func(c *contributors.Config) { c.Kinds = append(c.Kinds, "ServiceAccount") },
		entries: []contributors.Contributor{
			{Kind: "ServiceAccount", Name: "runner", Role: "edit"},
			{Kind: "ServiceAccount", Name: "ci", Namespace: "ci-system", Role: "view"},
		},
		want: contributors.Objects{Bindings: []*rbacv1ac.RoleBindingApplyConfiguration{
			wantBinding("serviceaccount-ci-clusterrole-view", "view", rbacv1ac.Subject().WithKind("ServiceAccount").WithName("ci").WithNamespace("ci-system"), map[string]string{"user": "ci", "role": "view"}),
			wantBinding("serviceaccount-runner-clusterrole-edit", "edit", rbacv1ac.Subject().WithKind("ServiceAccount").WithName("runner").WithNamespace("team-a"), map[string]string{"user": "runner", "role": "edit"}),
		}},
	}, {
		reason: "one person with two roles gets two bindings, sorted by name",
		config: func(c *contributors.Config) { c.Roles = []string{"admin", "edit", "view"} },
		entries: []contributors.Contributor{
			{Kind: "User", Name: "bob@example.org", Role: "view"},
			{Kind: "User", Name: "bob@example.org", Role: "admin"},
		},
		want: contributors.Objects{
			Bindings: []*rbacv1ac.RoleBindingApplyConfiguration{
				wantBinding("user-bob-example-org-clusterrole-admin", "admin", userSubject("bob@example.org"), map[string]string{"user": "bob@example.org", "role": "admin"}),
				wantBinding("user-bob-example-org-clusterrole-view", "view", userSubject("bob@example.org"), map[string]string{"user": "bob@example.org", "role": "view"}),
			},
			Policies: []*securityv1ac.AuthorizationPolicyApplyConfiguration{
				wantPolicy("user-bob-example-org-clusterrole-admin", map[string]string{"user": "bob@example.org", "role": "admin"},
					fromCallers(&securityv1beta1.Condition{Key: "request.headers[kubeflow-userid]", Values: []string{"bob@example.org"}})),
				wantPolicy("user-bob-example-org-clusterrole-view", map[string]string{"user": "bob@example.org", "role": "view"},
					fromCallers(&securityv1beta1.Condition{Key: "request.headers[kubeflow-userid]", Values: []string{"bob@example.org"}})),
			},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg := baseConfig()
			if tc.config != nil {
				tc.config(cfg)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("config: %v", err)
			}
			cfg.Contributors = tc.entries
			got, err := contributors.Build(cfg, listing(map[string]any{"contributors": tc.entries}))
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one starting %q", err, tc.wantErr)
			case tc.wantErr != "" && plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec:
				t.Errorf("reason %q, want InvalidSpec", plugins.ReasonOf(err, ""))
			}
		})
	}
}
