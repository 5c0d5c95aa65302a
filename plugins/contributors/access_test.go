package contributors_test

import (
	"testing"

	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/profilekit/profilekit/internal/istioauthz"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/plugins/internal/access"
)

// TestPoliciesAdmit evaluates the policies Build writes with Istio's
// semantics: who gets through to the namespace on their account alone.
func TestPoliciesAdmit(t *testing.T) {
	const other = "cluster.local/ns/elsewhere/sa/default"
	entries := []contributors.Contributor{
		{Kind: "User", Name: "bob@example.org", Role: "edit"},
		{Kind: "Group", Name: "readers", Role: "view"},
		{Kind: "User", Name: "*", Role: "view"},                // refused: a wildcard
		{Kind: "ServiceAccount", Name: "runner", Role: "edit"}, // RBAC only
	}
	header := func(k, v string) map[string]string { return map[string]string{k: v} }
	tests := []struct {
		reason  string
		groups  access.Groups
		prefix  string
		request istioauthz.Request
		want    bool
	}{
		{reason: "a user's header from the gateway", request: istioauthz.Request{Principal: gatewayPrincipal, Headers: header("kubeflow-userid", "bob@example.org")}, want: true},
		{reason: "from the pipelines UI", request: istioauthz.Request{Principal: pipelinesUI, Headers: header("kubeflow-userid", "bob@example.org")}, want: true},
		{reason: "header names are not case-sensitive", request: istioauthz.Request{Principal: gatewayPrincipal, Headers: header("Kubeflow-Userid", "bob@example.org")}, want: true},
		{reason: "the same header from any other workload is forged", request: istioauthz.Request{Principal: other, Headers: header("kubeflow-userid", "bob@example.org")}},
		{reason: "a plain-text request with the header", request: istioauthz.Request{Headers: header("kubeflow-userid", "bob@example.org")}},
		{reason: "another user", request: istioauthz.Request{Principal: gatewayPrincipal, Headers: header("kubeflow-userid", "mallory@example.org")}},
		{reason: "the refused wildcard admits no one", request: istioauthz.Request{Principal: gatewayPrincipal, Headers: header("kubeflow-userid", "anyone")}},
		{reason: "the prefix is part of the value", prefix: "accounts.example.org:", request: istioauthz.Request{Principal: gatewayPrincipal, Headers: header("kubeflow-userid", "accounts.example.org:bob@example.org")}, want: true},
		{reason: "without the prefix, no match", prefix: "accounts.example.org:", request: istioauthz.Request{Principal: gatewayPrincipal, Headers: header("kubeflow-userid", "bob@example.org")}},
		{reason: "no groups setting: a group's member is not admitted", request: istioauthz.Request{Principal: gatewayPrincipal, Headers: header("kubeflow-groups", "readers")}},
		{reason: "the group alone in the header", groups: access.Groups{Header: "kubeflow-groups"}, request: istioauthz.Request{Principal: gatewayPrincipal, Headers: header("kubeflow-groups", "readers")}, want: true},
		{reason: "the group first", groups: access.Groups{Header: "kubeflow-groups"}, request: istioauthz.Request{Principal: gatewayPrincipal, Headers: header("kubeflow-groups", "readers,admins")}, want: true},
		{reason: "the group last", groups: access.Groups{Header: "kubeflow-groups"}, request: istioauthz.Request{Principal: gatewayPrincipal, Headers: header("kubeflow-groups", "admins,readers")}, want: true},
		{reason: "a group whose name starts alike", groups: access.Groups{Header: "kubeflow-groups"}, request: istioauthz.Request{Principal: gatewayPrincipal, Headers: header("kubeflow-groups", "readers-not")}},
		{reason: "the group's header from another workload", groups: access.Groups{Header: "kubeflow-groups"}, request: istioauthz.Request{Principal: other, Headers: header("kubeflow-groups", "readers")}},
		{reason: "a group claim, any element", groups: access.Groups{Claim: "groups"}, request: istioauthz.Request{Principal: gatewayPrincipal, Claims: map[string][]string{"groups": {"admins", "readers", "ops"}}}, want: true},
		{reason: "a claim without the group", groups: access.Groups{Claim: "groups"}, request: istioauthz.Request{Principal: gatewayPrincipal, Claims: map[string][]string{"groups": {"admins"}}}},
		{reason: "a service account has no policy: its own identity is not admitted by this plugin", request: istioauthz.Request{Principal: "cluster.local/ns/team-a/sa/runner"}},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Kinds = append(cfg.Kinds, "ServiceAccount")
			cfg.Groups, cfg.UserIDPrefix, cfg.Contributors = tc.groups, tc.prefix, entries
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			objs, _ := contributors.Build(cfg, listing(map[string]any{"contributors": entries}))
			var policies []*securityv1beta1.AuthorizationPolicy
			for _, ap := range objs.Policies {
				policies = append(policies, ap.Spec)
			}
			if len(policies) == 0 {
				t.Fatal("no policy")
			}
			d, err := istioauthz.Evaluate(policies, tc.request)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.want {
				t.Errorf("allowed %v (%s), want %v", d.Allowed, d.Reason, tc.want)
			}
		})
	}
}
