package expose_test

import (
	"encoding/json"
	"errors"
	goruntime "runtime"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/expose"
)

// maxFuzzAlloc bounds what one input may allocate: a few rendered values of
// MaxHeaderValueBytes and their parse trees need far less.
const maxFuzzAlloc = 64 << 20

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
		p, err := headerProfile(name, value)
		if err != nil {
			t.Skip("not representable as JSON")
		}
		// A template must not be able to make the host build far more than
		// it writes: measure what decoding and building allocate.
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		defer func() {
			goruntime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > maxFuzzAlloc {
				t.Fatalf("decoding and building %d bytes of template allocated %d MiB", len(value), n>>20)
			}
		}()
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

// headerProfile returns a Profile named fuzz whose expose entry has two
// apps, the first setting header name and adding X-Added, both to value.
func headerProfile(name, value string) (*kubeflowv1.Profile, error) {
	spec, err := json.Marshal(map[string]any{"apps": []map[string]any{
		{"name": "app", "service": "svc", "port": 80, "requestHeaders": map[string]any{
			"set": map[string]string{name: value},
			"add": map[string]string{"X-Added": value},
		}},
		{"name": "other", "service": "svc", "port": 8080, "rewriteToRoot": true},
	}})
	if err != nil {
		return nil, err
	}
	return &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "fuzz"},
		Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{{
			TypeMeta: metav1.TypeMeta{Kind: expose.Kind},
			Spec:     &runtime.RawExtension{Raw: spec},
		}}},
	}, nil
}

// TestHeaderTemplatesAreBounded checks that a short template cannot build a
// huge value that is measured instead of written: each of these once took
// the host's memory (2^40 bytes for the first two) before any check ran.
func TestHeaderTemplatesAreBounded(t *testing.T) {
	def := expose.DefinitionFromEnv(func(string) (string, bool) { return "", false })
	for _, tc := range []struct{ reason, value, wantErr string }{
		{"a value doubled by print", `{{ $v := "ab" }}` + strings.Repeat(`{{ $v = print $v $v }}`, 40) + `{{ len $v }}`, "print: rendered value is longer than 8192 bytes"},
		{"nested escapers", `{{ len ` + strings.Repeat(`(js `, 40) + `"\\"` + strings.Repeat(`)`, 40) + ` }}`, "js: rendered value is longer than 8192 bytes"},
		{"a width from the arguments", `{{ len (printf "%*d" 999999 1) }}`, "a width or precision taken from the arguments (*) is not allowed"},
		{"a wide padding", `{{ len (printf "%09999d" 1) }}`, "width or precision 09999: rendered value is longer than 8192 bytes"},
		{"paddings that add up", `{{ len (printf "%8000d%8000d" 1 2) }}`, "printf: rendered value is longer than 8192 bytes"},
		{"an escaped value kept long", `{{ len (urlquery (printf "%8000s" "%")) }}`, "urlquery: rendered value is longer than 8192 bytes"},
	} {
		p, err := headerProfile("X-Value", tc.value)
		if err != nil {
			t.Fatal(err)
		}
		_, err = def.Decode(nil, p)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", tc.reason, err, tc.wantErr)
			continue
		}
		wantInvalidSpec(t, tc.reason, err)
	}

	// The builtins still work within the bound.
	p, err := headerProfile("X-Value", `{{ printf "%s-%03d" (httpPathPrefix "app") 7 }}{{ print "|" (js "'") (len (html "<")) }}`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := def.Decode(nil, p)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	vss, err := expose.Build(c.(*expose.Config), p)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if got, want := vss[0].Spec.Http[0].Headers.Request.Set["X-Value"], `/app/fuzz/-007|\'4`; got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
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

// TestHeaderTemplateBounds: a value of exactly MaxHeaderValueBytes is
// taken and one byte more is refused, however it is made; printf's
// padding is counted from every verb of its format; and a format cut short
// renders as fmt renders it.
func TestHeaderTemplateBounds(t *testing.T) {
	def := expose.DefinitionFromEnv(func(string) (string, bool) { return "", false })
	const limit = expose.MaxHeaderValueBytes
	x := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		reason, value, want, wantErr string
	}{
		{reason: "text of the bound", value: x(limit), want: x(limit)},
		{reason: "text over the bound", value: x(limit + 1), wantErr: "rendered value is longer than 8192 bytes"},
		{reason: "print of the bound", value: `{{ print "` + x(limit) + `" }}`, want: x(limit)},
		{reason: "print over the bound", value: `{{ print "` + x(limit) + `" "y" }}`, wantErr: "print: rendered value is longer than 8192 bytes"},
		// printf counts its format, its padding and twice its arguments.
		{reason: "printf within its estimate", value: `{{ printf "%s" "` + x((limit-2)/2) + `" }}`, want: x((limit - 2) / 2)},
		{reason: "printf over its estimate", value: `{{ printf "%s" "` + x((limit-2)/2+1) + `" }}`, wantErr: "printf: rendered value is longer than 8192 bytes"},
		{reason: "printf's padding counts", value: `{{ printf "%5s" "` + x((limit-3-5)/2+1) + `" }}`, wantErr: "printf: rendered value is longer than 8192 bytes"},
		{reason: "a padding of the bound is no error by itself", value: `{{ printf "%8192d" 1 }}`, wantErr: "printf: rendered value is longer than 8192 bytes"},
		{reason: "a padding of nines", value: `{{ printf "%9000d" 1 }}`, wantErr: "width or precision 9000: rendered value is longer than 8192 bytes"},
		{reason: "every verb's padding counts", value: `{{ printf "%5dx%9000d" 1 2 }}`, wantErr: "width or precision 9000: rendered value is longer than 8192 bytes"},
		{reason: "a format ending in %", value: `{{ printf "100%" }}`, want: "100%!(NOVERB)"},
		{reason: "a format ending in a width", value: `{{ printf "%5" }}`, want: "%!(NOVERB)"},
		{reason: "range after a with", value: `{{ with "a" }}{{ . }}{{ end }}{{ range $i, $c := "ab" }}{{ end }}`, wantErr: "range is not allowed"},
		{reason: "range inside a with", value: `{{ with "a" }}{{ range $i, $c := "ab" }}{{ end }}{{ end }}`, wantErr: "range is not allowed"},
	} {
		p, err := headerProfile("X-Value", tc.value)
		if err != nil {
			t.Fatal(err)
		}
		c, err := def.Decode(nil, p)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.reason, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.reason, err)
			continue
		}
		vss, err := expose.Build(c.(*expose.Config), p)
		if err != nil {
			t.Errorf("%s: build: %v", tc.reason, err)
			continue
		}
		if got := vss[0].Spec.Http[0].Headers.Request.Set["X-Value"]; got != tc.want {
			t.Errorf("%s: rendered %d bytes %.40q, want %d bytes %.40q", tc.reason, len(got), got, len(tc.want), tc.want)
		}
	}
}
