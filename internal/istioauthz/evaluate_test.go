package istioauthz

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
)

const gateway = "cluster.local/ns/istio-system/sa/gateway"

type (
	policy    = securityv1beta1.AuthorizationPolicy
	rule      = securityv1beta1.Rule
	condition = securityv1beta1.Condition
)

func allow(rules ...*rule) *policy { return &policy{Rules: rules} }

func deny(rules ...*rule) *policy {
	return &policy{Action: securityv1beta1.AuthorizationPolicy_DENY, Rules: rules}
}

func from(s *securityv1beta1.Source) []*securityv1beta1.Rule_From {
	return []*securityv1beta1.Rule_From{{Source: s}}
}

func to(o *securityv1beta1.Operation) []*securityv1beta1.Rule_To {
	return []*securityv1beta1.Rule_To{{Operation: o}}
}

func when(key string, values ...string) []*condition {
	return []*condition{{Key: key, Values: values}}
}

// userRule is the shape of profilekit's user rule: the header counts only
// from the gateway.
var userRule = &rule{From: from(&securityv1beta1.Source{Principals: []string{gateway}}), When: when("request.headers[kubeflow-userid]", "alice@example.org")}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		reason   string
		policies []*policy
		request  Request
		want     bool
	}{
		{"no policy at all allows", nil, Request{}, true},
		{"only a DENY policy that does not match allows", []*policy{deny(&rule{When: when("source.namespace", "evil")})}, Request{Namespace: "good"}, true},
		{"an ALLOW policy without rules denies everything", []*policy{allow()}, Request{Principal: gateway}, false},
		{"an empty rule allows everything", []*policy{allow(&rule{})}, Request{}, true},
		{"a DENY policy without rules denies nothing", []*policy{deny(), allow(&rule{})}, Request{}, true},
		{"DENY wins over ALLOW", []*policy{allow(&rule{}), deny(&rule{To: to(&securityv1beta1.Operation{Paths: []string{"/secret*"}})})}, Request{Path: "/secret/x"}, false},
		{"one ALLOW policy is enough", []*policy{allow(userRule), allow(&rule{When: when("source.namespace", "team-a")})}, Request{Namespace: "team-a"}, true},

		{"the header from the gateway", []*policy{allow(userRule)}, Request{Principal: gateway, Headers: map[string]string{"kubeflow-userid": "alice@example.org"}}, true},
		{"header names in any case", []*policy{allow(userRule)}, Request{Principal: gateway, Headers: map[string]string{"Kubeflow-UserID": "alice@example.org"}}, true},
		{"header values are case-sensitive", []*policy{allow(userRule)}, Request{Principal: gateway, Headers: map[string]string{"kubeflow-userid": "Alice@example.org"}}, false},
		{"the header from another workload: from and when must both match", []*policy{allow(userRule)}, Request{Principal: "cluster.local/ns/team-b/sa/default", Headers: map[string]string{"kubeflow-userid": "alice@example.org"}}, false},
		{"the gateway without the header", []*policy{allow(userRule)}, Request{Principal: gateway}, false},
		{"a plain-text request has no principal", []*policy{allow(&rule{From: from(&securityv1beta1.Source{Principals: []string{"*"}})})}, Request{}, false},
		{"notPrincipals holds for a plain-text request", []*policy{allow(&rule{From: from(&securityv1beta1.Source{NotPrincipals: []string{"*"}})})}, Request{}, true},

		{"prefix match", []*policy{allow(&rule{When: when("request.headers[g]", "ml-team,*")})}, Request{Headers: map[string]string{"g": "ml-team,b"}}, true},
		{"a prefix is not a substring", []*policy{allow(&rule{When: when("request.headers[g]", "ml-team,*")})}, Request{Headers: map[string]string{"g": "a,ml-team,b"}}, false},
		{"suffix match", []*policy{allow(&rule{When: when("request.headers[g]", "*,ml-team")})}, Request{Headers: map[string]string{"g": "a,ml-team"}}, true},
		{"a * inside is a literal", []*policy{allow(&rule{When: when("request.headers[g]", "a*b")})}, Request{Headers: map[string]string{"g": "axxb"}}, false},
		{"*abc* is the suffix abc*", []*policy{allow(&rule{When: when("request.headers[g]", "*ml*")})}, Request{Headers: map[string]string{"g": "x-ml*"}}, true},
		{"presence: a header present, even empty", []*policy{allow(&rule{When: when("request.headers[g]", "*")})}, Request{Headers: map[string]string{"g": ""}}, true},
		{"presence: a missing header", []*policy{allow(&rule{When: when("request.headers[g]", "*")})}, Request{}, false},
		{"notValues: a missing header is none of them", []*policy{allow(&rule{When: []*condition{{Key: "request.headers[g]", NotValues: []string{"x"}}}})}, Request{}, true},
		{"values and notValues both hold", []*policy{allow(&rule{When: []*condition{{Key: "request.headers[g]", Values: []string{"team-*"}, NotValues: []string{"team-b"}}}})}, Request{Headers: map[string]string{"g": "team-b"}}, false},
		{"every condition must hold", []*policy{allow(&rule{When: []*condition{{Key: "source.namespace", Values: []string{"a"}}, {Key: "request.headers[g]", Values: []string{"x"}}}})}, Request{Namespace: "a"}, false},

		{"a claim matches when any element does", []*policy{allow(&rule{When: when("request.auth.claims[groups]", "ml-team")})}, Request{Claims: map[string][]string{"groups": {"a", "ml-team", "b"}}}, true},
		{"a claim without the element", []*policy{allow(&rule{When: when("request.auth.claims[groups]", "ml-team")})}, Request{Claims: map[string][]string{"groups": {"a", "ml-team-b"}}}, false},
		{"no claims: no token", []*policy{allow(&rule{When: when("request.auth.claims[groups]", "*")})}, Request{}, false},
		{"notValues over a claim: no element may match", []*policy{allow(&rule{When: []*condition{{Key: "request.auth.claims[groups]", NotValues: []string{"banned"}}}})}, Request{Claims: map[string][]string{"groups": {"a", "banned"}}}, false},

		{"source.principal condition", []*policy{allow(&rule{When: when("source.principal", "cluster.local/ns/kubeflow/*")})}, Request{Principal: "cluster.local/ns/kubeflow/sa/ui"}, true},
		{"namespaces", []*policy{allow(&rule{From: from(&securityv1beta1.Source{Namespaces: []string{"team-a"}})})}, Request{Namespace: "team-b"}, false},
		{"one of several sources", []*policy{allow(&rule{From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Namespaces: []string{"x"}}}, {Source: &securityv1beta1.Source{Namespaces: []string{"team-b"}}}}})}, Request{Namespace: "team-b"}, true},
		{"fields of a source are ANDed", []*policy{allow(&rule{From: from(&securityv1beta1.Source{Namespaces: []string{"kubeflow"}, NotPrincipals: []string{"cluster.local/ns/kubeflow/sa/bad"}})})}, Request{Namespace: "kubeflow", Principal: "cluster.local/ns/kubeflow/sa/bad"}, false},
		{"method and path of an operation", []*policy{allow(&rule{To: to(&securityv1beta1.Operation{Methods: []string{"GET"}, Paths: []string{"*/api/kernels"}})})}, Request{Method: "GET", Path: "/notebook/a/b/api/kernels?x=1"}, true},
		{"another method", []*policy{allow(&rule{To: to(&securityv1beta1.Operation{Methods: []string{"GET"}, Paths: []string{"*/api/kernels"}})})}, Request{Method: "POST", Path: "/notebook/a/b/api/kernels"}, false},
		{"notPaths", []*policy{allow(&rule{To: to(&securityv1beta1.Operation{NotPaths: []string{"/admin*"}})})}, Request{Path: "/admin/x"}, false},
		{"a selector is not read", []*policy{{Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "other"}}}}, Request{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := Evaluate(tc.policies, tc.request)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Allowed); diff != "" {
				t.Errorf("allowed (-want +got), decided by %s:\n%s", got.Reason, diff)
			}
		})
	}
}

func TestEvaluateRefusesWhatItDoesNotKnow(t *testing.T) {
	tests := []struct {
		reason string
		policy *policy
		want   string
	}{
		{"a CUSTOM action", &policy{Action: securityv1beta1.AuthorizationPolicy_CUSTOM, Rules: []*rule{{}}}, "action CUSTOM is not supported"},
		{"an AUDIT action", &policy{Action: securityv1beta1.AuthorizationPolicy_AUDIT}, "action AUDIT is not supported"},
		{"a target reference", &policy{TargetRef: &typev1beta1.PolicyTargetReference{Kind: "Gateway", Name: "g"}}, "AuthorizationPolicy field targetRef is not supported"},
		{"ip blocks", allow(&rule{From: from(&securityv1beta1.Source{IpBlocks: []string{"10.0.0.0/8"}})}), "Source field ip_blocks is not supported"},
		{"request principals", allow(&rule{From: from(&securityv1beta1.Source{RequestPrincipals: []string{"*"}})}), "Source field request_principals is not supported"},
		{"ports", allow(&rule{To: to(&securityv1beta1.Operation{Ports: []string{"8080"}})}), "Operation field ports is not supported"},
		{"hosts", deny(&rule{To: to(&securityv1beta1.Operation{NotHosts: []string{"x"}})}), "Operation field not_hosts is not supported"},
		{"an unknown condition key", allow(&rule{When: when("destination.port", "80")}), `condition key "destination.port" is not supported`},
		{"a header key without a name", allow(&rule{When: when("request.headers[]", "x")}), `condition key "request.headers[]" is not supported`},
		{"a nested claim", allow(&rule{When: when("request.auth.claims[realm][groups]", "x")}), "nested claims are not supported"},
		{"a condition without values", allow(&rule{When: []*condition{{Key: "source.namespace"}}}), "a condition needs values or notValues"},
		{"an empty source", allow(&rule{From: from(&securityv1beta1.Source{})}), "a source must set a field"},
		{"a missing operation", allow(&rule{To: []*securityv1beta1.Rule_To{{}}}), "an operation must set a field"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			// An empty rule first: the request would be allowed before the
			// unknown part is reached, and still nothing is decided.
			policies := []*policy{allow(&rule{}), tc.policy}
			got, err := Evaluate(policies, Request{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			if got.Allowed {
				t.Errorf("allowed by %s along with the error", got.Reason)
			}
		})
	}
}
