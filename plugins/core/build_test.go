package core_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
)

func TestNamespaceLabels(t *testing.T) {
	tests := []struct {
		reason     string
		defaults   map[string]string
		live       map[string]string
		owned      []string
		want       map[string]string
		wantRemove []string
	}{
		{
			reason:   "a new namespace gets every label with a value",
			defaults: map[string]string{"istio-injection": "enabled", "team": "a", "gone": ""},
			want:     map[string]string{"istio-injection": "enabled", "team": "a"},
		},
		{
			reason:   "a value already there is never changed, and a key someone else set is not ours to apply",
			defaults: map[string]string{"team": "b"},
			live:     map[string]string{"team": "x"},
			want:     map[string]string{},
		},
		{
			reason:   "a key we set keeps its value when the file gives another",
			defaults: map[string]string{"team": "b"},
			live:     map[string]string{"team": "a"},
			owned:    []string{"team"},
			want:     map[string]string{"team": "a"},
		},
		{
			reason:     "an empty value removes the key, ours or anyone's",
			defaults:   map[string]string{"ours": "", "theirs": ""},
			live:       map[string]string{"ours": "1", "theirs": "2"},
			owned:      []string{"ours"},
			want:       map[string]string{},
			wantRemove: []string{"ours", "theirs"},
		},
		{
			reason:   "an empty value for a key the namespace lacks removes nothing",
			defaults: map[string]string{"gone": ""},
			live:     map[string]string{"other": "1"},
			want:     map[string]string{},
		},
		{
			reason:   "a key dropped from the file stays where we set it",
			defaults: map[string]string{},
			live:     map[string]string{"old": "1"},
			owned:    []string{"old"},
			want:     map[string]string{"old": "1"},
		},
		{
			reason:   "a key removed by hand comes back",
			defaults: map[string]string{"team": "a"},
			live:     map[string]string{},
			owned:    []string{"team"},
			want:     map[string]string{"team": "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, remove := core.NamespaceLabels(tt.defaults, tt.live, tt.owned)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRemove, remove, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("remove (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultLabels(t *testing.T) {
	tests := []struct {
		reason string
		mesh   string
		file   map[string]string
		want   map[string]string
	}{
		{reason: "sidecar mode adds the injection label", mesh: core.MeshSidecar, want: map[string]string{"istio-injection": "enabled"}},
		{reason: "no mesh, no label", mesh: core.MeshNone, file: map[string]string{"a": "1"}, want: map[string]string{"a": "1"}},
		{reason: "the file's entry for the injection label wins", mesh: core.MeshSidecar, file: map[string]string{"istio-injection": ""}, want: map[string]string{"istio-injection": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg := core.NewConfig()
			cfg.Mesh = tt.mesh
			if diff := cmp.Diff(tt.want, core.DefaultLabels(cfg, tt.file)); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		reason  string
		data    string
		want    map[string]string
		wantErr string
	}{
		{reason: "upstream's file", data: "# comment\napp.kubernetes.io/part-of: \"kubeflow-profile\"\nremove-me: \"\"\n", want: map[string]string{"app.kubernetes.io/part-of": "kubeflow-profile", "remove-me": ""}},
		{reason: "an empty file", data: "", want: map[string]string{}},
		{reason: "not a map", data: "- a\n- b\n", wantErr: "want a map of label keys to string values"},
		{reason: "a value that is not a label value", data: "team: \"not valid!\"\n", wantErr: `team="not valid!"`},
		{reason: "a key that is not a label key", data: "\"bad key\": x\n", wantErr: `key "bad key"`},
		{reason: "profilekit's own labels", data: "app.kubernetes.io/managed-by: someone\n", wantErr: `key "app.kubernetes.io/managed-by" is profilekit's own`},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, err := core.ParseLabels([]byte(tt.data), "labels.yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidConfig {
					t.Errorf("error %v is not a terminal InvalidConfig error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	env := map[string]string{
		core.EnvUserIDHeader:         "x-user",
		core.EnvUserIDPrefix:         "accounts:",
		core.EnvIngressPrincipal:     "cluster.local/ns/gw/sa/gw",
		core.EnvNotebookPrincipal:    "",
		core.EnvPipelinesUIPrincipal: "cluster.local/ns/kf/sa/ui",
	}
	got := core.ConfigFromEnv(func(k string) string { return env[k] })
	want := &core.Config{
		UserIDHeader: "x-user",
		UserIDPrefix: "accounts:",
		Mesh:         core.MeshSidecar,
		Principals: core.Principals{
			IngressGateway:     "cluster.local/ns/gw/sa/gw",
			PipelinesUI:        "cluster.local/ns/kf/sa/ui",
			NotebookController: core.DefaultNotebookPrincipal,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config from the upstream variables (-want +got):\n%s", diff)
	}

	tests := []struct {
		reason  string
		mutate  func(*core.Config)
		wantErr string
	}{
		{reason: "the defaults are valid", mutate: func(*core.Config) {}},
		{reason: "no header", mutate: func(c *core.Config) { c.UserIDHeader = "" }, wantErr: "userIdHeader is empty"},
		{reason: "a header with a space", mutate: func(c *core.Config) { c.UserIDHeader = "x user" }, wantErr: `userIdHeader "x user"`},
		{reason: "an unknown mesh mode", mutate: func(c *core.Config) { c.Mesh = "ambient" }, wantErr: `mesh "ambient"`},
		{reason: "no gateway principal", mutate: func(c *core.Config) { c.Principals.IngressGateway = "" }, wantErr: "principals.ingressGateway is empty"},
		{reason: "no pipelines principal is fine when only the gateway counts", mutate: func(c *core.Config) { c.Principals.PipelinesUI = ""; c.OwnerFromGatewayOnly = true }},
		{reason: "a groups header and claim", mutate: func(c *core.Config) { c.Groups.Header, c.Groups.Claim = "kubeflow-groups", "groups" }},
		{reason: "a groups header with a space", mutate: func(c *core.Config) { c.Groups.Header = "kubeflow groups" }, wantErr: `groups.header "kubeflow groups": not an HTTP header name`},
		{reason: "the groups header is the user-id header", mutate: func(c *core.Config) { c.Groups.Header = "Kubeflow-Userid" }, wantErr: `groups.header "Kubeflow-Userid" is the user-id header`},
		{reason: "a nested groups claim", mutate: func(c *core.Config) { c.Groups.Claim = "realm[groups]" }, wantErr: `groups.claim "realm[groups]"`},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			c := core.ConfigFromEnv(func(string) string { return "" })
			tt.mutate(c)
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestAccessSpec(t *testing.T) {
	tests := []struct {
		reason         string
		gatewayOnly    bool
		wantPrincipals []string
	}{
		{reason: "the owner through the gateway and the pipelines UI", wantPrincipals: []string{core.DefaultIngressPrincipal, core.DefaultPipelinesUIPrincipal}},
		{reason: "the owner through the gateway only", gatewayOnly: true, wantPrincipals: []string{core.DefaultIngressPrincipal}},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg := core.ConfigFromEnv(func(string) string { return "" })
			cfg.UserIDPrefix = "accounts:"
			cfg.OwnerFromGatewayOnly = tt.gatewayOnly
			spec, err := core.AccessSpec(cfg, profile("team-a", "alice@example.org"))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(spec.Rules); got != 4 {
				t.Fatalf("%d rules, want 4", got)
			}
			owner := spec.Rules[0]
			if diff := cmp.Diff(tt.wantPrincipals, owner.From[0].Source.Principals); diff != "" {
				t.Errorf("owner rule principals (-want +got):\n%s", diff)
			}
			if got := owner.When[0].Key + "=" + strings.Join(owner.When[0].Values, ","); got != "request.headers[kubeflow-userid]=accounts:alice@example.org" {
				t.Errorf("owner rule condition = %s", got)
			}
			if got := spec.Rules[1].When[0].Key + "=" + strings.Join(spec.Rules[1].When[0].Values, ","); got != "source.namespace=team-a" {
				t.Errorf("same-namespace rule = %s", got)
			}
		})
	}
}
