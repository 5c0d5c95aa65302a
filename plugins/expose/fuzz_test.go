package expose_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/expose"
)

// FuzzHeaderTemplate feeds arbitrary header names and template values through
// the path a Profile's spec takes: strict decoding, Validate (which parses and
// executes every template) and Build for Profiles with other names. Nothing
// may panic, every rejection is a terminal InvalidSpec error, and every header
// value that would be written is bounded and holds no line break or NUL.
func FuzzHeaderTemplate(f *testing.F) {
	for _, s := range [][2]string{
		{"X-Forwarded-Prefix", `{{ httpPathPrefix "app" }}`},
		{"X-Other", `{{ httpPathPrefix "other" }}/api`},
		{"X-Plain", "value"},
		{"X-Missing", `{{ httpPathPrefix "nope" }}`},
		{"X-Field", "{{ .Namespace }}"},
		{"X-Range", "{{ range $i := 3 }}x{{ end }}"},
		{"X-Define", `{{ define "x" }}y{{ end }}{{ template "x" }}`},
		{"X-If", `{{ if eq (httpPathPrefix "app") "/app/namespace/" }}a{{ else }}b{{ end }}`},
		{"X-Wide", `{{ printf "%99999d" 1 }}`},
		{"X-Newline", `{{ "a\nb" }}`},
		{"bad name", "v"},
		{"X-Unclosed", "{{ httpPathPrefix "},
		{"X-Block", `{{ block "b" . }}z{{ end }}`},
		{"X-With", `{{ with $p := httpPathPrefix "app" }}{{ $p }}{{ else with 1 }}{{ . }}{{ end }}`},
		{"X-Call", `{{ call httpPathPrefix "app" }}`},
		{"X-Self", `{{ define "set[X-Self]" }}{{ template "set[X-Self]" }}{{ end }}`},
	} {
		f.Add(s[0], s[1])
	}
	def := expose.DefinitionFromEnv(func(string) (string, bool) { return "", false })
	f.Fuzz(func(t *testing.T, name, value string) {
		spec, err := json.Marshal(map[string]any{"apps": []map[string]any{
			{"name": "app", "service": "svc", "port": 80, "requestHeaders": map[string]any{
				"set": map[string]string{name: value},
				"add": map[string]string{"X-Added": value},
			}},
			{"name": "other", "service": "svc", "port": 8080, "rewriteToRoot": true},
		}})
		if err != nil {
			t.Skip("not representable as JSON")
		}
		p := &kubeflowv1.Profile{
			ObjectMeta: metav1.ObjectMeta{Name: "fuzz"},
			Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{{
				TypeMeta: metav1.TypeMeta{Kind: expose.Kind},
				Spec:     &runtime.RawExtension{Raw: spec},
			}}},
		}
		c, err := def.Decode(nil, p)
		if err != nil {
			wantInvalidSpec(t, "decode", err)
			return
		}
		cfg := c.(*expose.Config)
		// Validate ran the templates for one namespace; other Profile names
		// change the prefixes they see, so Build may still refuse, but only
		// as a terminal error.
		for _, profile := range []string{"fuzz", "n", strings.Repeat("n", 63)} {
			vss, err := expose.Build(cfg, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: profile}})
			if err != nil {
				wantInvalidSpec(t, "build "+profile, err)
				continue
			}
			for _, vs := range vss {
				for _, r := range vs.Spec.Http {
					if r.Headers == nil || r.Headers.Request == nil {
						continue
					}
					for _, m := range []map[string]string{r.Headers.Request.Set, r.Headers.Request.Add} {
						for h, v := range m {
							if len(v) > expose.MaxHeaderValueBytes {
								t.Fatalf("header %s: %d bytes, above %d", h, len(v), expose.MaxHeaderValueBytes)
							}
							if strings.ContainsAny(v, "\r\n\x00") {
								t.Fatalf("header %s: value %q holds a line break or NUL", h, v)
							}
						}
					}
				}
			}
		}
	})
}

// wantInvalidSpec fails unless err is a terminal InvalidSpec error that names
// the plugin.
func wantInvalidSpec(t *testing.T, what string, err error) {
	t.Helper()
	var te *plugins.TerminalError
	if !errors.As(err, &te) || !plugins.IsTerminal(err) {
		t.Fatalf("%s: error %v is not terminal", what, err)
	}
	if te.Reason != plugins.ReasonInvalidSpec {
		t.Fatalf("%s: reason %q, want %s (error: %v)", what, te.Reason, plugins.ReasonInvalidSpec, err)
	}
	if !strings.Contains(err.Error(), expose.Kind) {
		t.Fatalf("%s: error %q does not name plugin %s", what, err, expose.Kind)
	}
}
