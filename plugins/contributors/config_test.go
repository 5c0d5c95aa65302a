package contributors_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/plugins/internal/access"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		reason string
		env    map[string]string
		want   [4]string // header, prefix, gateway, pipelines UI
	}{
		{"nothing set: upstream's defaults", nil, [4]string{"kubeflow-userid", "", gatewayPrincipal, pipelinesUI}},
		{"the upstream controller's variables", map[string]string{
			"USERID_HEADER": "x-user", "USERID_PREFIX": "p:",
			"ISTIO_INGRESS_GATEWAY_PRINCIPAL": "cluster.local/ns/gw/sa/gw", "KFP_UI_PRINCIPAL": "cluster.local/ns/kfp/sa/ui",
		}, [4]string{"x-user", "p:", "cluster.local/ns/gw/sa/gw", "cluster.local/ns/kfp/sa/ui"}},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			c := contributors.ConfigFromEnv(func(k string) string { return tc.env[k] })
			got := [4]string{c.UserIDHeader, c.UserIDPrefix, c.Principals.IngressGateway, c.Principals.PipelinesUI}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"edit", "view"}, c.Roles); diff != "" {
				t.Errorf("roles (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"User", "Group"}, c.Kinds); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
			if c.MaxContributors != 50 || len(c.UserDomains) != 0 || c.Groups.Enabled() {
				t.Errorf("max %d, domains %v, groups %+v: want 50, none, none", c.MaxContributors, c.UserDomains, c.Groups)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		reason  string
		change  func(*contributors.Config)
		wantErr []string // each a line of the error, in part
	}{
		{"the defaults", nil, nil},
		{"every limit opened", func(c *contributors.Config) {
			c.Roles, c.Kinds = []string{"admin", "edit", "view"}, []string{"User", "Group", "ServiceAccount"}
			c.Groups, c.UserDomains, c.MaxContributors = access.Groups{Header: "kubeflow-groups", Claim: "groups"}, []string{"*@example.org", "ops@*.example.net", "svc@example.com"}, 500
		}, nil},
		{"a header that is no header name", func(c *contributors.Config) { c.UserIDHeader = "kubeflow userid" }, []string{`userIDHeader "kubeflow userid": not an HTTP header name`}},
		{"a prefix Istio reads as a wildcard", func(c *contributors.Config) { c.UserIDPrefix = "*:" }, []string{`userIDPrefix "*:"`}},
		{"no gateway", func(c *contributors.Config) { c.Principals.IngressGateway = "" }, []string{"principals.ingressGateway is empty"}},
		{"white space in a principal", func(c *contributors.Config) { c.Principals.PipelinesUI = "a b" }, []string{`principals.pipelinesUI "a b" contains white space`}},
		{"a bad groups setting", func(c *contributors.Config) { c.Groups.Separator = "*" }, []string{`groups.separator "*"`}},
		{"roles: none, unknown, twice", func(c *contributors.Config) { c.Roles = []string{"edit", "owner", "edit"} }, []string{`roles[1] "owner": want one of admin, edit, view`, `roles[2] "edit": listed twice`}},
		{"no roles at all", func(c *contributors.Config) { c.Roles = nil }, []string{"roles: at least one of admin, edit, view is needed"}},
		{"kinds: unknown", func(c *contributors.Config) { c.Kinds = []string{"Robot"} }, []string{`kinds[0] "Robot": want one of User, Group, ServiceAccount`}},
		{"no contributor allowed", func(c *contributors.Config) { c.MaxContributors = 0 }, []string{"maxContributors 0: want at least 1"}},
		{"one contributor at most", func(c *contributors.Config) { c.MaxContributors = 1 }, nil},
		{"domain patterns", func(c *contributors.Config) {
			c.UserDomains = []string{"example.org", "@example.org", "*@*", "a@b@c", " *@example.org", "**@example.org"}
		}, []string{`userDomains[0]: "example.org": want one "@"`, `userDomains[1]: "@example.org": want text on both sides`, `userDomains[2]: "*@*": the domain must not be "*" alone`, `userDomains[3]: "a@b@c": want one "@"`, `userDomains[4]: " *@example.org": white space`, `userDomains[5]: "**@example.org"`}},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			c := baseConfig()
			if tc.change != nil {
				tc.change(c)
			}
			err := c.Validate()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.wantErr)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.wantErr) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tc.wantErr), err)
			}
			for i, w := range tc.wantErr {
				if !strings.Contains(lines[i], w) {
					t.Errorf("line %d %q does not hold %q", i, lines[i], w)
				}
			}
		})
	}
}

// TestDecode: a Profile sets its contributors and nothing else; the spec is
// decoded strictly.
func TestDecode(t *testing.T) {
	def := contributors.Definition()
	tests := []struct {
		reason  string
		spec    map[string]any
		want    []contributors.Contributor
		wantErr string
	}{
		{"entries", map[string]any{"contributors": []any{map[string]any{"kind": "User", "name": "bob@example.org", "role": "edit"}}},
			[]contributors.Contributor{{Kind: "User", Name: "bob@example.org", Role: "edit"}}, ""},
		{"a host-only field", map[string]any{"roles": []string{"admin"}}, nil, `spec.plugins[1] (contributors).spec: field "roles" is set by the host only`},
		{"the limit too", map[string]any{"maxContributors": 1000}, nil, `field "maxContributors" is set by the host only`},
		{"an unknown field of an entry", map[string]any{"contributors": []any{map[string]any{"kind": "User", "name": "bob", "role": "edit", "roles": "admin"}}}, nil, `unknown field "contributors[0].roles"`},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg, err := def.Decode(nil, listing(tc.spec))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
					t.Fatalf("error %v, want an InvalidSpec holding %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cfg.(*contributors.Config).Contributors); diff != "" {
				t.Errorf("contributors (-want +got):\n%s", diff)
			}
		})
	}
}
