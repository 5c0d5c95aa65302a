package network

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// fuzzHostDefaults has one policy behind a spec gate, one behind a label gate
// and one whose selectors hold tmpl, so that one input reaches the gate
// parser, the placeholder checker and the builder.
func fuzzHostDefaults(tmpl string) ([]byte, error) {
	sel := map[string]any{
		"matchLabels":      map[string]string{"app": tmpl},
		"matchExpressions": []map[string]any{{"key": "team", "operator": "In", "values": []string{tmpl}}},
	}
	return json.Marshal(map[string]any{
		"policies": []map[string]any{
			{"name": "spec-gated", "gate": map[string]string{"spec": "open"}, "podSelector": map[string]any{}, "policyTypes": []string{"Ingress"}},
			{"name": "label-gated", "gate": map[string]string{"label": "network.example.org/open"}, "podSelector": map[string]any{}, "policyTypes": []string{"Ingress"}},
			{"name": "templated", "podSelector": sel, "policyTypes": []string{"Ingress"},
				"ingress": []map[string]any{{"from": []map[string]any{{"namespaceSelector": sel}}}}},
		},
	})
}

// fixedTemplate is a selector value that always loads, so that the gate
// checks run whatever the fuzzed template is.
const fixedTemplate = "{{ .Profile }}"

// wantTerminal fails unless err is a terminal error with one of the reasons.
func wantTerminal(t *testing.T, what string, err error, reasons ...string) {
	t.Helper()
	var te *plugins.TerminalError
	if !errors.As(err, &te) || !plugins.IsTerminal(err) {
		t.Fatalf("%s: error %v is not terminal", what, err)
	}
	for _, r := range reasons {
		if te.Reason == r {
			return
		}
	}
	t.Fatalf("%s: reason %q, want one of %v (error: %v)", what, te.Reason, reasons, err)
}

// FuzzGates feeds arbitrary spec gate values (raw JSON), label gate values and
// selector placeholders through the host's and the Profile's decoding and the
// builder. Nothing may panic, every rejection is a terminal error with the
// reason the condition would show, and a gated policy is written exactly when
// its value parses as true.
func FuzzGates(f *testing.F) {
	for _, s := range [][3]string{
		{`true`, "true", "{{ .Namespace }}"},
		{`"TRUE"`, "1", "team-{{.Profile}}"},
		{`false`, "f", "plain"},
		{`"yes"`, "yes", "{{ .Name }}"},
		{`1`, "", "{{ .Profile }"},
		{`null`, "T", "{{{ .Profile }}}"},
		{`{"a":1}`, " true", "{{ .Namespace }}{{ .Namespace }}{{ .Namespace }}{{ .Namespace }}{{ .Namespace }}{{ .Namespace }}{{ .Namespace }}{{ .Namespace }}{{ .Namespace }}"},
		{`"\ud800"`, "\x00", "{{\t.Profile\n}}"},
		{`"true" `, "False", ""},
		{`tru`, "0", "}}{{"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	def := Definition()
	f.Fuzz(func(t *testing.T, specGate, label, tmpl string) {
		// The selector template is the host's: a bad one is InvalidConfig.
		defaults, err := fuzzHostDefaults(tmpl)
		if err != nil {
			t.Skip("not representable as JSON")
		}
		if cfg, err := def.DecodeHostDefaults(defaults); err != nil {
			wantTerminal(t, "host defaults", err, plugins.ReasonInvalidConfig)
		} else {
			checkTemplated(t, cfg.(*Config), tmpl)
		}

		defaults, err = fuzzHostDefaults(fixedTemplate)
		if err != nil {
			t.Fatal(err)
		}
		p := &kubeflowv1.Profile{
			ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Labels: map[string]string{"network.example.org/open": label}},
			Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{{
				TypeMeta: metav1.TypeMeta{Kind: Kind},
				Spec:     &runtime.RawExtension{Raw: []byte(`{"gates":{"open":` + specGate + `}}`)},
			}}},
		}
		c, err := def.Decode(defaults, p)
		if err != nil {
			wantTerminal(t, "profile spec", err, plugins.ReasonInvalidSpec)
			return
		}
		cfg := c.(*Config)
		d, err := Build(cfg, p)
		if err != nil {
			wantTerminal(t, "build", err, plugins.ReasonInvalidSpec)
			return
		}
		gv, specSet := cfg.Gates["open"]
		checkGate(t, d, "spec-gated", string(gv), specSet, plugins.ReasonInvalidSpec)
		checkGate(t, d, "label-gated", label, true, plugins.ReasonInvalidLabel)
	})
}

// checkGate checks that policy is on exactly when value parses as true, and
// that a value which is set but not a boolean is reported with reason.
func checkGate(t *testing.T, d Desired, policy, value string, set bool, reason string) {
	t.Helper()
	on, perr := strconv.ParseBool(value)
	wantOn := set && perr == nil && on
	gotOn := false
	for _, np := range d.Policies {
		if *np.Name == policy {
			gotOn = true
		}
	}
	if gotOn != wantOn {
		t.Fatalf("policy %s with gate value %q (set %v): on=%v, want %v", policy, value, set, gotOn, wantOn)
	}
	var off *Gated
	for i := range d.Off {
		if d.Off[i].Policy == policy {
			off = &d.Off[i]
		}
	}
	if wantOn {
		if off != nil {
			t.Fatalf("policy %s is on and also listed off: %+v", policy, *off)
		}
		return
	}
	if off == nil {
		t.Fatalf("policy %s is off but not listed in Off", policy)
	}
	if wantInvalid := set && perr != nil; off.Invalid != wantInvalid {
		t.Fatalf("policy %s gate value %q: invalid=%v, want %v", policy, value, off.Invalid, wantInvalid)
	}
	if off.Invalid {
		if off.Reason() != reason {
			t.Fatalf("policy %s: reason %q, want %q", policy, off.Reason(), reason)
		}
		if !strings.Contains(off.Message(), policy) {
			t.Fatalf("policy %s: message %q does not name the policy", policy, off.Message())
		}
	}
}

// checkTemplated builds the templated policy of a host config that loaded:
// either it fails as a terminal InvalidSpec (the Profile's name made a value
// invalid), or no placeholder braces are left in what would be written.
func checkTemplated(t *testing.T, cfg *Config, tmpl string) {
	t.Helper()
	for _, name := range []string{"p", "fuzz", "a-profile-with-a-long-name-that-fills-most-of-a-label-value-xx"} {
		d, err := Build(cfg, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if err != nil {
			wantTerminal(t, "build "+name, err, plugins.ReasonInvalidSpec)
			continue
		}
		for _, np := range d.Policies {
			if *np.Name != "templated" {
				continue
			}
			v := np.Spec.PodSelector.MatchLabels["app"]
			if strings.Contains(v, "{{") || strings.Contains(v, "}}") {
				t.Fatalf("template %q expanded for %s to %q, which still holds braces", tmpl, name, v)
			}
		}
	}
}
