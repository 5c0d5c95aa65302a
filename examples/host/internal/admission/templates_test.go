package admission_test

import (
	"strings"
	"testing"

	"github.com/profilekit/profilekit/examples/host/internal/admission"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/templates"
)

// templatesHost runs the templates plugin for every Profile: a
// ServiceMonitor for each, and a Role for the gold ones that ask.
const templatesHost = `
plugins:
  templates:
    enabled: all
    defaults:
      templates:
      - name: metrics
        object:
          apiVersion: monitoring.coreos.com/v1
          kind: ServiceMonitor
          metadata: {name: profile-metrics}
          spec: {namespaceSelector: {matchNames: ['{{ .Namespace }}']}, endpoints: [{port: metrics}]}
      - name: gold
        optIn: true
        profileSelector: {matchLabels: {tier: gold}}
        object: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: gold}}
`

// A plugin whose owned kinds come from the host's configuration renders
// offline as the host runs it, and the webhook refuses a Profile that asks
// for a template the host does not have, or one it is not offered.
func TestTemplatesRefusals(t *testing.T) {
	reg, err := plugins.NewRegistry(templates.Definition())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := hostconfig.Parse("templates.yaml", []byte(templatesHost), reg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	v := admission.New(cfg, reg, s)
	for _, tc := range []struct {
		reason, profile, denied string
	}{
		{reason: "no opt-in", profile: `{"apiVersion":"kubeflow.org/v1","kind":"Profile","metadata":{"name":"team-a"},"spec":{"owner":{"kind":"User","name":"a@example.org"}}}`},
		{reason: "a template offered", profile: `{"apiVersion":"kubeflow.org/v1","kind":"Profile","metadata":{"name":"team-a","labels":{"tier":"gold"}},"spec":{"owner":{"kind":"User","name":"a@example.org"},"plugins":[{"kind":"templates","spec":{"enable":["gold"]}}]}}`},
		{reason: "a template the host does not have", profile: `{"apiVersion":"kubeflow.org/v1","kind":"Profile","metadata":{"name":"team-a"},"spec":{"owner":{"kind":"User","name":"a@example.org"},"plugins":[{"kind":"templates","spec":{"enable":["admin"]}}]}}`,
			denied: `TemplatesReady would be False: InvalidSpec: spec.plugins[0] (templates).spec: enable[0]: "admin": no such template; the host offers gold`},
		{reason: "a template not offered to the Profile", profile: `{"apiVersion":"kubeflow.org/v1","kind":"Profile","metadata":{"name":"team-a"},"spec":{"owner":{"kind":"User","name":"a@example.org"},"plugins":[{"kind":"templates","spec":{"enable":["gold"]}}]}}`,
			denied: "TemplatesReady would be False: InvalidSpec: template gold: enable names it, but it is not offered to this Profile"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			profiles, err := render.ReadProfiles(strings.NewReader(tc.profile), tc.reason)
			if err != nil {
				t.Fatal(err)
			}
			denied, warnings := v.Decide(t.Context(), nil, profiles[0])
			switch {
			case tc.denied == "" && len(denied) > 0:
				t.Fatalf("denied: %v", denied)
			case tc.denied != "" && (len(denied) != 1 || !strings.Contains(denied[0], tc.denied)):
				t.Fatalf("denied = %q, want %q", denied, tc.denied)
			case len(warnings) > 0:
				t.Errorf("warnings = %q, want none", warnings)
			}
			if tc.denied != "" {
				return
			}
			out, err := render.New(cfg, reg, s).Render(t.Context(), profiles)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Objects) == 0 || out.Objects[0].Object.GetKind() != "ServiceMonitor" || out.Objects[0].Object.GetNamespace() != "team-a" {
				t.Errorf("rendered %v, want the ServiceMonitor in team-a first", out.Objects)
			}
		})
	}
}
