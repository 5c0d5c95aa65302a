package authpolicy

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
)

const groupsConfig = "{groups: {header: kubeflow-groups, claim: groups}}"

func ownedBy(kind, name string) *kubeflowv1.Profile {
	p := profile("team-a", name)
	p.Spec.Owner.Kind = kind
	return p
}

func groupRules(principals []string, names ...string) []*securityv1beta1.Rule {
	var values []string
	for _, n := range names {
		values = append(values, n, n+",*", "*,"+n)
	}
	from := []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: principals}}}
	return []*securityv1beta1.Rule{
		{From: from, When: []*securityv1beta1.Condition{{Key: "request.headers[kubeflow-groups]", Values: values}}},
		{From: from, When: []*securityv1beta1.Condition{{Key: "request.auth.claims[groups]", Values: names}}},
	}
}

// checkErr fails unless err is a terminal InvalidSpec error holding each of
// want, or want is empty and err nil.
func checkErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
		return
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error = %v, want one containing %q", err, w)
		}
	}
	if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
		t.Errorf("error %v is not a terminal InvalidSpec error", err)
	}
}

func TestAccessSpecGroups(t *testing.T) {
	gw := []string{gateway}
	tail := []*securityv1beta1.Rule{sameNamespace("team-a"), notebookController("team-a")}
	tests := []struct {
		reason  string
		config  string
		p       *kubeflowv1.Profile
		members Members
		want    []*securityv1beta1.Rule // before tail
		wantErr []string
	}{
		{reason: "group contributors by the groups header and claim, users by the user-id header", config: groupsConfig, p: ownedBy(rbacv1.UserKind, "owner@example.org"),
			members: Members{Users: []string{"bob@example.org"}, Groups: []string{"ml-team", "data"}},
			want:    append([]*securityv1beta1.Rule{usersRule("kubeflow-userid", "bob@example.org", "owner@example.org")}, groupRules(gw, "data", "ml-team")...)},
		{reason: "a Group owner joins the group contributors", config: groupsConfig, p: ownedBy(rbacv1.GroupKind, "ml-team"),
			members: Members{Groups: []string{"data"}}, want: groupRules(gw, "data", "ml-team")},
		{reason: "a ServiceAccount owner gets no header rule", config: groupsConfig, p: ownedBy(rbacv1.ServiceAccountKind, "ci-bot")},
		{reason: "the groups principals are the gateways'", config: "{groups: {header: kubeflow-groups, claim: groups}, gatewayPrincipals: [a, b]}", p: ownedBy(rbacv1.GroupKind, "ml-team"),
			want: groupRules([]string{"a", "b"}, "ml-team")},
		{reason: "names that cannot be matched are left out and named, the rest stays", config: groupsConfig, p: ownedBy(rbacv1.UserKind, "owner@example.org"),
			members: Members{Users: []string{"*", "bob@example.org", "eve*"}, Groups: []string{"*", "ml,team", "", "ml-team"}},
			want:    append([]*securityv1beta1.Rule{usersRule("kubeflow-userid", "bob@example.org", "owner@example.org")}, groupRules(gw, "ml-team")...),
			wantErr: []string{`contributor: user "*"`, `contributor: user "eve*"`, `contributor: group "*"`, `contributor: group "ml,team" holds the groups header's separator`, "contributor: group name is empty"}},
		{reason: "a Group owner that cannot be matched", config: groupsConfig, p: ownedBy(rbacv1.GroupKind, "ml*"),
			wantErr: []string{`spec.owner: group "ml*"`}},
		{reason: "a prefix that makes a user a wildcard", config: "{userIDPrefix: '*'}", p: ownedBy(rbacv1.UserKind, "owner@example.org"),
			wantErr: []string{`spec.owner: user "*owner@example.org"`}},
		{reason: "groups while the host configures none", p: ownedBy(rbacv1.GroupKind, "ml-team"), members: Members{Groups: []string{"data"}},
			wantErr: []string{`spec.owner: group "ml-team": the host configures neither`, `contributor: group "data": the host configures neither`}},
		{reason: "an owner of an unknown kind", p: ownedBy("Robot", "r2"), members: Members{Users: []string{"bob@example.org"}},
			want: []*securityv1beta1.Rule{usersRule("kubeflow-userid", "bob@example.org")}, wantErr: []string{`spec.owner: kind "Robot"`}},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := AccessSpec(load(t, tc.config), tc.p, tc.members)
			checkErr(t, err, tc.wantErr...)
			want := &securityv1beta1.AuthorizationPolicy{Rules: append(append([]*securityv1beta1.Rule(nil), tc.want...), tail...)}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("AccessSpec (-want +got):\n%s", diff)
			}
		})
	}
}

// With nothing else to allow, a policy whose every name was left out admits
// no one, rather than go away and leave the namespace open to all.
func TestAccessSpecAdmitsNoOneWhenAllIsLeftOut(t *testing.T) {
	cfg := load(t, "{groups: {header: kubeflow-groups}, sameNamespace: false, notebookController: {principals: []}}")
	got, err := AccessSpec(cfg, ownedBy(rbacv1.GroupKind, "*"), Members{})
	checkErr(t, err, `group "*"`)
	if diff := cmp.Diff(&securityv1beta1.AuthorizationPolicy{}, got, protocmp.Transform()); diff != "" {
		t.Errorf("AccessSpec (-want +got):\n%s", diff)
	}
	if d, err := istioauthz.Evaluate([]*securityv1beta1.AuthorizationPolicy{got}, fromGateway("kubeflow-groups", "*")); err != nil || d.Allowed {
		t.Errorf("allowed = %v (%s, %v), want denied", d.Allowed, d.Reason, err)
	}
}

// renderedPolicies builds p's policies and returns their specs as they
// would reach the API server (encoded and decoded), with Build's error.
func renderedPolicies(t *testing.T, cfg *Config, p *kubeflowv1.Profile, m Members) ([]*securityv1beta1.AuthorizationPolicy, error) {
	t.Helper()
	acs, err := Build(cfg, p, m)
	var out []*securityv1beta1.AuthorizationPolicy
	for _, ac := range acs {
		data, merr := json.Marshal(ac)
		if merr != nil {
			t.Fatal(merr)
		}
		var ap securityv1.AuthorizationPolicy
		if merr := json.Unmarshal(data, &ap); merr != nil {
			t.Fatal(merr)
		}
		out = append(out, &ap.Spec)
	}
	if len(out) == 0 {
		t.Fatal("Build gave no policy")
	}
	return out, err
}

func fromGateway(header, value string) istioauthz.Request {
	return istioauthz.Request{Principal: gateway, Namespace: "istio-system", Headers: map[string]string{header: value}, Method: "GET", Path: "/notebook/team-a/nb/"}
}

func stranger(header, value string) istioauthz.Request {
	return istioauthz.Request{Principal: "cluster.local/ns/team-b/sa/default-editor", Namespace: "team-b", Headers: map[string]string{header: value}, Method: "GET", Path: "/"}
}

func withClaim(groups ...string) istioauthz.Request {
	return istioauthz.Request{Principal: gateway, Namespace: "istio-system", Claims: map[string][]string{"groups": groups}, Method: "GET", Path: "/"}
}

type request struct {
	reason  string
	req     istioauthz.Request
	allowed bool
}

var neighbour = request{"the namespace's own workloads still get in", istioauthz.Request{Principal: "cluster.local/ns/team-a/sa/default-editor", Namespace: "team-a"}, true}

func TestAccessRequests(t *testing.T) {
	groupRequests := []request{
		{"the group alone in the header", fromGateway("kubeflow-groups", "ml-team"), true},
		{"the group first", fromGateway("kubeflow-groups", "ml-team,data"), true},
		{"the group last", fromGateway("kubeflow-groups", "data,ml-team"), true},
		{"the group in the middle: the documented limit of a header", fromGateway("kubeflow-groups", "data,ml-team,ops"), false},
		{"a group that ends like it", fromGateway("kubeflow-groups", "data,xml-team"), false},
		{"the same header from another workload", stranger("kubeflow-groups", "ml-team"), false},
		{"the group in a token's claim", withClaim("a", "ml-team", "b"), true},
		{"a token without it", withClaim("a", "b"), false},
		{"a user whose user-id is the group's name", fromGateway("kubeflow-userid", "ml-team"), false},
		neighbour,
	}
	tests := []struct {
		reason   string
		config   string
		p        *kubeflowv1.Profile
		members  Members
		wantErr  string
		requests []request
	}{
		{reason: "a group contributor", config: groupsConfig, p: ownedBy(rbacv1.UserKind, "owner@example.org"), members: Members{Users: []string{"bob@example.org"}, Groups: []string{"ml-team"}},
			requests: append([]request{
				{"the owner", fromGateway("kubeflow-userid", "owner@example.org"), true},
				{"a user contributor", fromGateway("kubeflow-userid", "bob@example.org"), true},
				{"a user contributor's name as a group", fromGateway("kubeflow-groups", "bob@example.org"), false},
			}, groupRequests...)},
		{reason: "a Group owner", config: groupsConfig, p: ownedBy(rbacv1.GroupKind, "ml-team"), requests: groupRequests},
		{reason: "a ServiceAccount owner", config: groupsConfig, p: ownedBy(rbacv1.ServiceAccountKind, "ci-bot"), requests: []request{
			{"no user-id header speaks for it", fromGateway("kubeflow-userid", "ci-bot"), false},
			neighbour,
		}},
		{reason: "a group named *", config: groupsConfig, p: ownedBy(rbacv1.UserKind, "owner@example.org"), members: Members{Groups: []string{"*"}}, wantErr: `group "*"`, requests: []request{
			{"the header *", fromGateway("kubeflow-groups", "*"), false},
			{"any group", fromGateway("kubeflow-groups", "data"), false},
			{"a claim *", withClaim("*"), false},
			{"the owner still", fromGateway("kubeflow-userid", "owner@example.org"), true},
			neighbour,
		}},
		{reason: "a group holding the separator", config: groupsConfig, p: ownedBy(rbacv1.UserKind, "owner@example.org"), members: Members{Groups: []string{"ml,team"}}, wantErr: `group "ml,team"`, requests: []request{
			{"two groups that spell it", fromGateway("kubeflow-groups", "ml,team"), false},
			{"its name in a claim", withClaim("ml,team"), false},
			{"the owner still", fromGateway("kubeflow-userid", "owner@example.org"), true},
		}},
		{reason: "an empty group", config: groupsConfig, p: ownedBy(rbacv1.UserKind, "owner@example.org"), members: Members{Groups: []string{""}}, wantErr: "group name is empty", requests: []request{
			{"an empty header", fromGateway("kubeflow-groups", ""), false},
			{"an empty claim", withClaim(""), false},
		}},
		{reason: "a user named *", config: groupsConfig, p: ownedBy(rbacv1.UserKind, "owner@example.org"), members: Members{Users: []string{"*"}}, wantErr: `user "*"`, requests: []request{
			{"the user-id *", fromGateway("kubeflow-userid", "*"), false},
			{"anyone", fromGateway("kubeflow-userid", "mallory@example.org"), false},
			{"the owner still", fromGateway("kubeflow-userid", "owner@example.org"), true},
		}},
		{reason: "a group contributor while the host configures no groups", p: ownedBy(rbacv1.UserKind, "owner@example.org"), members: Members{Groups: []string{"ml-team"}}, wantErr: `group "ml-team"`, requests: []request{
			{"a user of the group's name", fromGateway("kubeflow-userid", "ml-team"), false},
			{"the group's header", fromGateway("kubeflow-groups", "ml-team"), false},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			policies, err := renderedPolicies(t, load(t, tc.config), tc.p, tc.members)
			if tc.wantErr == "" {
				checkErr(t, err)
			} else {
				checkErr(t, err, tc.wantErr)
			}
			for _, r := range tc.requests {
				d, err := istioauthz.Evaluate(policies, r.req)
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
