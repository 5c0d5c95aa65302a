package core_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/istioauthz"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/internal/access"
)

// groupsConfig is the built-in configuration with oauth2-proxy's groups
// header and a groups claim.
func groupsConfig() *core.Config {
	cfg := core.ConfigFromEnv(func(string) string { return "" })
	cfg.Groups = access.Groups{Header: "kubeflow-groups", Claim: "groups"}
	return cfg
}

func ownedBy(kind, name string) *kubeflowv1.Profile {
	p := profile("team-a", name)
	p.Spec.Owner.Kind = kind
	if kind == rbacv1.ServiceAccountKind {
		p.Spec.Owner.APIGroup, p.Spec.Owner.Namespace = "", "ci"
	}
	return p
}

// renderedPolicy builds p's objects and returns the AuthorizationPolicy's
// spec as it would reach the API server (encoded and decoded), with
// Build's error.
func renderedPolicy(t *testing.T, cfg *core.Config, p *kubeflowv1.Profile) (*securityv1beta1.AuthorizationPolicy, error) {
	t.Helper()
	objs, err := core.Build(cfg, p, nil)
	if len(objs) != 7 {
		t.Fatalf("Build gave %d objects (%v), want all 7 whatever the owner", len(objs), err)
	}
	for _, o := range objs {
		data, merr := json.Marshal(o)
		if merr != nil {
			t.Fatal(merr)
		}
		var ap securityv1.AuthorizationPolicy
		if merr := json.Unmarshal(data, &ap); merr != nil {
			t.Fatal(merr)
		}
		if ap.Kind == "AuthorizationPolicy" {
			return &ap.Spec, err
		}
	}
	t.Fatal("Build gave no AuthorizationPolicy")
	return nil, nil
}

// The rules that follow the owner's whoever the owner is.
var otherRules = []*securityv1beta1.Rule{
	{When: []*securityv1beta1.Condition{{Key: "source.namespace", Values: []string{"team-a"}}}},
	{To: []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Paths: core.ProbePaths}}}},
	{
		From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{core.DefaultNotebookPrincipal}}}},
		To:   []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Methods: []string{"GET"}, Paths: []string{core.KernelsPath}}}},
	},
}

func TestOwnerRules(t *testing.T) {
	users := []string{core.DefaultIngressPrincipal, core.DefaultPipelinesUIPrincipal}
	byHeader := func(header string, principals []string, values ...string) *securityv1beta1.Rule {
		return &securityv1beta1.Rule{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: principals}}},
			When: []*securityv1beta1.Condition{{Key: header, Values: values}},
		}
	}
	tests := []struct {
		reason    string
		cfg       func(*core.Config)
		p         *kubeflowv1.Profile
		wantOwner []*securityv1beta1.Rule
		wantErr   string
	}{
		{reason: "a User by the user-id header", p: ownedBy(rbacv1.UserKind, "alice@example.org"),
			wantOwner: []*securityv1beta1.Rule{byHeader("request.headers[kubeflow-userid]", users, "alice@example.org")}},
		{reason: "a Group by the groups header, alone, first or last, and by the claim", p: ownedBy(rbacv1.GroupKind, "ml-team"),
			wantOwner: []*securityv1beta1.Rule{
				byHeader("request.headers[kubeflow-groups]", users, "ml-team", "ml-team,*", "*,ml-team"),
				byHeader("request.auth.claims[groups]", users, "ml-team"),
			}},
		{reason: "a Group through the gateway only", cfg: func(c *core.Config) { c.OwnerFromGatewayOnly = true; c.Groups.Claim = "" }, p: ownedBy(rbacv1.GroupKind, "ml-team"),
			wantOwner: []*securityv1beta1.Rule{byHeader("request.headers[kubeflow-groups]", users[:1], "ml-team", "ml-team,*", "*,ml-team")}},
		{reason: "a ServiceAccount by no header: RBAC only", p: ownedBy(rbacv1.ServiceAccountKind, "ci-bot")},
		{reason: "a Group while the host configures no groups", cfg: func(c *core.Config) { c.Groups = access.Groups{} }, p: ownedBy(rbacv1.GroupKind, "ml-team"),
			wantErr: `spec.owner: group "ml-team": the host configures neither a groups header nor a groups claim`},
		{reason: "a Group named *", p: ownedBy(rbacv1.GroupKind, "*"), wantErr: `spec.owner: group "*": Istio would read the "*" as a wildcard`},
		{reason: "a Group holding the separator", p: ownedBy(rbacv1.GroupKind, "ml,team"), wantErr: `spec.owner: group "ml,team" holds the groups header's separator`},
		{reason: "a User ending in *", p: ownedBy(rbacv1.UserKind, "alice*"), wantErr: `spec.owner: user "alice*": Istio would read the "*" as a wildcard`},
		{reason: "the prefix counts", cfg: func(c *core.Config) { c.UserIDPrefix = "*" }, p: ownedBy(rbacv1.UserKind, "alice"), wantErr: `spec.owner: user "*alice"`},
		{reason: "an unknown kind", p: ownedBy("Robot", "r2"), wantErr: `spec.owner: kind "Robot": want User, Group or ServiceAccount`},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg := groupsConfig()
			if tc.cfg != nil {
				tc.cfg(cfg)
			}
			spec, err := renderedPolicy(t, cfg, tc.p)
			checkErr(t, err, tc.wantErr)
			want := append(append([]*securityv1beta1.Rule(nil), tc.wantOwner...), otherRules...)
			if diff := cmp.Diff(want, spec.Rules, protocmp.Transform()); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

// checkErr fails unless err is a terminal InvalidSpec error holding want,
// or want is empty and err nil.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want one containing %q", err, want)
	}
	if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
		t.Errorf("error %v is not a terminal InvalidSpec error", err)
	}
}

// request is one request to a workload of the Profile's namespace.
type request struct {
	reason  string
	req     istioauthz.Request
	allowed bool
}

func fromGateway(header, value string) istioauthz.Request {
	return istioauthz.Request{Principal: core.DefaultIngressPrincipal, Namespace: "istio-system", Headers: map[string]string{header: value}, Method: "GET", Path: "/notebook/team-a/nb/"}
}

// stranger is a workload of another Profile, which can set any header.
func stranger(header, value string) istioauthz.Request {
	return istioauthz.Request{Principal: "cluster.local/ns/team-b/sa/default-editor", Namespace: "team-b", Headers: map[string]string{header: value}, Method: "GET", Path: "/"}
}

func withClaim(groups ...string) istioauthz.Request {
	return istioauthz.Request{Principal: core.DefaultIngressPrincipal, Namespace: "istio-system", Claims: map[string][]string{"groups": groups}, Method: "GET", Path: "/"}
}

var neighbour = request{"the namespace's own workloads still get in", istioauthz.Request{Principal: "cluster.local/ns/team-a/sa/default-editor", Namespace: "team-a", Method: "POST", Path: "/api"}, true}

func TestOwnerAccessRequests(t *testing.T) {
	tests := []struct {
		reason   string
		cfg      func(*core.Config)
		p        *kubeflowv1.Profile
		wantErr  string
		requests []request
	}{
		{reason: "a Group owner", p: ownedBy(rbacv1.GroupKind, "ml-team"), requests: []request{
			{"the group alone in the header", fromGateway("kubeflow-groups", "ml-team"), true},
			{"the group first", fromGateway("kubeflow-groups", "ml-team,data"), true},
			{"the group last", fromGateway("Kubeflow-Groups", "data,ml-team"), true},
			{"the group in the middle: the documented limit of a header", fromGateway("kubeflow-groups", "data,ml-team,ops"), false},
			{"a group that ends like it", fromGateway("kubeflow-groups", "data,xml-team"), false},
			{"a group that starts like it", fromGateway("kubeflow-groups", "ml-team-b,data"), false},
			{"through the pipelines UI", istioauthz.Request{Principal: core.DefaultPipelinesUIPrincipal, Namespace: "kubeflow", Headers: map[string]string{"kubeflow-groups": "ml-team"}}, true},
			{"the same header from another workload", stranger("kubeflow-groups", "ml-team"), false},
			{"the group in a token's claim", withClaim("a", "ml-team", "b"), true},
			{"a token without it", withClaim("a", "b"), false},
			{"a user whose user-id is the group's name", fromGateway("kubeflow-userid", "ml-team"), false},
			neighbour,
		}},
		{reason: "a Group owner through the gateway only", cfg: func(c *core.Config) { c.OwnerFromGatewayOnly = true }, p: ownedBy(rbacv1.GroupKind, "ml-team"), requests: []request{
			{"through the gateway", fromGateway("kubeflow-groups", "ml-team"), true},
			{"through the pipelines UI", istioauthz.Request{Principal: core.DefaultPipelinesUIPrincipal, Namespace: "kubeflow", Headers: map[string]string{"kubeflow-groups": "ml-team"}}, false},
		}},
		{reason: "a User owner", p: ownedBy(rbacv1.UserKind, "alice@example.org"), requests: []request{
			{"by the user-id header", fromGateway("kubeflow-userid", "alice@example.org"), true},
			{"a group of the same name", fromGateway("kubeflow-groups", "alice@example.org"), false},
			{"the same header from another workload", stranger("kubeflow-userid", "alice@example.org"), false},
		}},
		{reason: "a ServiceAccount owner", p: ownedBy(rbacv1.ServiceAccountKind, "ci-bot"), requests: []request{
			{"no user-id header speaks for it", fromGateway("kubeflow-userid", "ci-bot"), false},
			{"nor a group", fromGateway("kubeflow-groups", "ci-bot"), false},
			neighbour,
		}},
		{reason: "a Group named *", p: ownedBy(rbacv1.GroupKind, "*"), wantErr: `group "*"`, requests: []request{
			{"the header *", fromGateway("kubeflow-groups", "*"), false},
			{"any group", fromGateway("kubeflow-groups", "data"), false},
			{"a claim *", withClaim("*"), false},
			{"a user *", fromGateway("kubeflow-userid", "*"), false},
			neighbour,
		}},
		{reason: "a Group holding the separator", p: ownedBy(rbacv1.GroupKind, "ml,team"), wantErr: `group "ml,team"`, requests: []request{
			{"two groups that spell it", fromGateway("kubeflow-groups", "ml,team"), false},
			{"its name in a claim", withClaim("ml,team"), false},
			neighbour,
		}},
		{reason: "a Group while the host configures no groups", cfg: func(c *core.Config) { c.Groups = access.Groups{} }, p: ownedBy(rbacv1.GroupKind, "ml-team"), wantErr: `group "ml-team"`, requests: []request{
			{"a user of the group's name", fromGateway("kubeflow-userid", "ml-team"), false},
			{"the group's header", fromGateway("kubeflow-groups", "ml-team"), false},
			neighbour,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg := groupsConfig()
			if tc.cfg != nil {
				tc.cfg(cfg)
			}
			spec, err := renderedPolicy(t, cfg, tc.p)
			checkErr(t, err, tc.wantErr)
			for _, r := range tc.requests {
				d, err := istioauthz.Evaluate([]*securityv1beta1.AuthorizationPolicy{spec}, r.req)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed != r.allowed {
					t.Errorf("%s: allowed = %v (%s), want %v", r.reason, d.Allowed, d.Reason, r.allowed)
				}
			}
		})
	}
}

// An empty group name never reaches the policy: a Profile needs an owner.
// AccessSpec on its own refuses it as well.
func TestAccessSpecRefusesAnEmptyGroup(t *testing.T) {
	spec, err := core.AccessSpec(groupsConfig(), ownedBy(rbacv1.GroupKind, ""))
	checkErr(t, err, "group name is empty")
	if diff := cmp.Diff(otherRules, spec.Rules, protocmp.Transform()); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	for _, req := range []istioauthz.Request{fromGateway("kubeflow-groups", ""), fromGateway("kubeflow-groups", ","), withClaim("")} {
		if d, err := istioauthz.Evaluate([]*securityv1beta1.AuthorizationPolicy{spec}, req); err != nil || d.Allowed {
			t.Errorf("request %+v: allowed = %v (%s, %v), want denied", req, d.Allowed, d.Reason, err)
		}
	}
	if _, err := core.Build(groupsConfig(), ownedBy(rbacv1.GroupKind, ""), nil); err == nil || !strings.Contains(err.Error(), "the Profile needs an owner") {
		t.Errorf("Build error = %v, want the Profile to need an owner", err)
	}
}
