package authpolicy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/plugins"
)

func TestNewConfigHonoursEnvironment(t *testing.T) {
	tests := []struct {
		reason     string
		env        map[string]string
		wantHeader string
		wantPrefix string
	}{
		{"nothing set: upstream's defaults", nil, "kubeflow-userid", ""},
		{"both set", map[string]string{EnvUserIDHeader: "x-goog-authenticated-user-email", EnvUserIDPrefix: "accounts.google.com:"}, "x-goog-authenticated-user-email", "accounts.google.com:"},
		{"an empty header keeps the default", map[string]string{EnvUserIDHeader: "", EnvUserIDPrefix: "p:"}, "kubeflow-userid", "p:"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg := newConfig(func(k string) string { return tc.env[k] })
			got := [2]string{cfg.UserIDHeader, cfg.UserIDPrefix}
			if diff := cmp.Diff([2]string{tc.wantHeader, tc.wantPrefix}, got); diff != "" {
				t.Errorf("header, prefix (-want +got):\n%s", diff)
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("defaults do not validate: %v", err)
			}
		})
	}
}

func TestConfigRejects(t *testing.T) {
	tests := []struct {
		reason string
		config string
		want   string
	}{
		{"upstream's policy is never ours", "{name: ns-owner-access-istio}", "belongs to the upstream profile controller"},
		{"a header name with a space", "{userIDHeader: 'kubeflow userid'}", "not an HTTP header name"},
		{"a groups header with a space", "{groups: {header: 'kubeflow groups'}}", `groups.header "kubeflow groups": not an HTTP header name`},
		{"the groups header is the user-id header", "{groups: {header: kubeflow-userid}}", `groups.header "kubeflow-userid" is the user-id header`},
		{"a * separator", "{groups: {header: kubeflow-groups, separator: '*'}}", `groups.separator "*"`},
		{"an unknown groups field", "{groups: {headers: kubeflow-groups}}", `unknown field "groups.headers"`},
		{"no gateway would lock every user out", "{gatewayPrincipals: []}", "gatewayPrincipals: at least one is needed"},
		{"an ALLOW policy without rules", "{policies: [{name: p, action: ALLOW, rules: []}]}", "an ALLOW policy without rules would deny every request"},
		{"an unknown action", "{policies: [{name: p, action: AUDIT, rules: []}]}", `action "AUDIT": want ALLOW or DENY`},
		{"an unknown placeholder", "{policies: [{name: p, action: DENY, rules: [{from: [{source: {principals: ['{{ .User }}']}}]}]}]}", "unknown placeholder {{ .User }}"},
		{"a policy named like the access policy", "{policies: [{name: profilekit-access, action: DENY, rules: []}]}", `"profilekit-access": name given twice`},
		{"a condition without values", "{policies: [{name: p, action: DENY, rules: [{when: [{key: 'request.auth.claims[groups]'}]}]}]}", "policies[p].rules[0].when[0]: needs a key and values or notValues"},
		{"an unknown field", "{policies: [{name: p, action: DENY, rules: [{form: []}]}]}", `unknown field "policies[0].rules[0].form"`},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			js, err := yaml.YAMLToJSON([]byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Definition().DecodeHostDefaults(js)
			if err == nil || !strings.Contains(err.Error(), tc.want) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidConfig {
				t.Fatalf("error = %v, want an InvalidConfig error containing %q", err, tc.want)
			}
		})
	}
}

// TestConfigAcceptsConditionsWithValuesAndNotValues: a condition may
// name values, values not allowed, or both.
func TestConfigAcceptsConditionsWithValuesAndNotValues(t *testing.T) {
	for _, when := range []string{"{key: k, values: [a]}", "{key: k, notValues: [b]}", "{key: k, values: [a], notValues: [b]}"} {
		js, err := yaml.YAMLToJSON([]byte("{policies: [{name: p, action: DENY, rules: [{when: [" + when + "]}]}]}"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Definition().DecodeHostDefaults(js); err != nil {
			t.Errorf("a condition %s: %v, want it taken", when, err)
		}
	}
}
