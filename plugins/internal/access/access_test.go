package access

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	securityv1beta1 "istio.io/api/security/v1beta1"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
)

// errText is an error's message, empty for none, for comparing with cmp.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestCheckUser(t *testing.T) {
	tests := []struct {
		reason string
		name   string
		want   string
	}{
		{"an e-mail address is matched exactly", "alice@example.org", ""},
		{"a prefixed name is matched exactly", "accounts.google.com:alice@example.org", ""},
		{"a * inside is a literal character to Istio", "al*ice", ""},
		{"empty", "", "user name is empty"},
		{"* alone would admit any user", "*", `user "*": Istio would read the "*" as a wildcard and admit more than this user`},
		{"a leading * is a suffix match", "*@example.org", `user "*@example.org": Istio would read the "*" as a wildcard and admit more than this user`},
		{"a trailing * is a prefix match", "alice*", `user "alice*": Istio would read the "*" as a wildcard and admit more than this user`},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, errText(CheckUser(tc.name))); diff != "" {
				t.Errorf("CheckUser(%q) (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}

func TestCheckGroup(t *testing.T) {
	header := Groups{Header: "kubeflow-groups"}
	tests := []struct {
		reason string
		groups Groups
		name   string
		want   string
	}{
		{"a plain name", header, "ml-team", ""},
		{"white space inside is matched literally", header, "ml team", ""},
		{"empty", header, "", "group name is empty"},
		{"* alone would admit any group", header, "*", `group "*": Istio would read the "*" as a wildcard and admit more than this group`},
		{"a * anywhere, since the header values add one at either end", header, "ml*team", `group "ml*team": Istio would read the "*" as a wildcard and admit more than this group`},
		{"the default separator", header, "ml,team", `group "ml,team" holds the groups header's separator ",": it could not be told from two groups`},
		{"a configured separator", Groups{Header: "kubeflow-groups", Separator: ";"}, "ml;team", `group "ml;team" holds the groups header's separator ";": it could not be told from two groups`},
		{"another separator's character is an ordinary one", Groups{Header: "kubeflow-groups", Separator: ";"}, "ml,team", ""},
		{"the claim alone has no separator", Groups{Claim: "groups"}, "ml,team", ""},
		{"but a * is a wildcard there too", Groups{Claim: "groups"}, "*", `group "*": Istio would read the "*" as a wildcard and admit more than this group`},
		{"white space at an end", header, "ml-team ", `group "ml-team ": white space at either end`},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, errText(tc.groups.CheckGroup(tc.name))); diff != "" {
				t.Errorf("CheckGroup(%q) (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}

func TestHeaderValues(t *testing.T) {
	tests := []struct {
		reason string
		groups Groups
		group  string
		want   []string
	}{
		{"alone, first, last with the default separator", Groups{Header: "kubeflow-groups"}, "ml-team", []string{"ml-team", "ml-team,*", "*,ml-team"}},
		{"a configured separator", Groups{Header: "x-groups", Separator: ";"}, "ml-team", []string{"ml-team", "ml-team;*", "*;ml-team"}},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.groups.HeaderValues(tc.group)); diff != "" {
				t.Errorf("HeaderValues (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRules(t *testing.T) {
	gateways := []string{"cluster.local/ns/istio-system/sa/gateway", "cluster.local/ns/kubeflow/sa/ml-pipeline-ui"}
	from := []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: gateways}}}
	headerRule := func(values ...string) *securityv1beta1.Rule {
		return &securityv1beta1.Rule{From: from, When: []*securityv1beta1.Condition{{Key: "request.headers[kubeflow-groups]", Values: values}}}
	}
	claimRule := func(values ...string) *securityv1beta1.Rule {
		return &securityv1beta1.Rule{From: from, When: []*securityv1beta1.Condition{{Key: "request.auth.claims[groups]", Values: values}}}
	}
	tests := []struct {
		reason string
		groups Groups
		names  []string
		want   []*securityv1beta1.Rule
	}{
		{"the header: each group alone, first or last, sorted and once", Groups{Header: "kubeflow-groups"}, []string{"ml-team", "data", "ml-team"},
			[]*securityv1beta1.Rule{headerRule("data", "data,*", "*,data", "ml-team", "ml-team,*", "*,ml-team")}},
		{"the claim: each group once", Groups{Claim: "groups"}, []string{"ml-team", "data"},
			[]*securityv1beta1.Rule{claimRule("data", "ml-team")}},
		{"both: a rule each, from the same principals", Groups{Header: "kubeflow-groups", Claim: "groups"}, []string{"ml-team"},
			[]*securityv1beta1.Rule{headerRule("ml-team", "ml-team,*", "*,ml-team"), claimRule("ml-team")}},
		{"no groups: no rule rather than one without values", Groups{Header: "kubeflow-groups", Claim: "groups"}, nil, nil},
		{"neither header nor claim: no rule", Groups{}, []string{"ml-team"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got := tc.groups.Rules(gateways, tc.names)
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("Rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		reason string
		groups Groups
		want   string
	}{
		{"nothing configured", Groups{}, ""},
		{"oauth2-proxy's header", Groups{Header: "kubeflow-groups"}, ""},
		{"a claim and a separator", Groups{Header: "x-groups", Separator: ";", Claim: "groups"}, ""},
		{"a header with a space", Groups{Header: "kubeflow groups"}, `groups.header "kubeflow groups": not an HTTP header name`},
		{"a blank separator", Groups{Header: "x", Separator: " "}, `groups.separator " ": want a character such as ",", not blank and not "*"`},
		{"a * separator", Groups{Header: "x", Separator: "*"}, `groups.separator "*": want a character such as ",", not blank and not "*"`},
		{"a nested claim", Groups{Claim: "realm[groups]"}, `groups.claim "realm[groups]": want a claim name without brackets, "*" or white space`},
		{"a claim with a space", Groups{Claim: "my groups"}, `groups.claim "my groups": want a claim name without brackets, "*" or white space`},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, errText(tc.groups.Validate(fieldpath.NewPath("groups")))); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsHeaderName(t *testing.T) {
	tests := []struct {
		reason string
		name   string
		want   bool
	}{
		{"a token", "kubeflow-groups", true},
		{"empty", "", false},
		{"a colon", "x:groups", false},
		{"non-ASCII", "gröups", false},
		{"the highest token character, ~", "x~groups", true},
		{"DEL, just above it", "x\x7fgroups", false},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, IsHeaderName(tc.name)); diff != "" {
				t.Errorf("IsHeaderName(%q) (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}
