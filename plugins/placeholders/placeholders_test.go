package placeholders_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/plugins/placeholders"
)

func TestPlaceholders(t *testing.T) {
	v := placeholders.Values{Namespace: "team-a", Profile: "team-a", Owner: "alice@example.org"}
	tests := []struct {
		reason  string
		in      string
		names   []string
		want    string
		wantErr string
	}{
		{reason: "no placeholder", in: "kube-system", names: []string{"Namespace"}, want: "kube-system"},
		{reason: "spaces optional", in: "{{.Namespace}}-{{ .Namespace }}", names: []string{"Namespace"}, want: "team-a-team-a"},
		{reason: "owner", in: "user:{{ .Owner }}", names: []string{"Namespace", "Owner"}, want: "user:alice@example.org"},
		{reason: "a name the plugin does not offer", in: "{{ .Owner }}", names: []string{"Namespace", "Profile"}, wantErr: `unknown placeholder {{ .Owner }}, want one of {{ .Namespace }}, {{ .Profile }}`},
		{reason: "a typo", in: "{{ .Namspace }}", names: []string{"Namespace"}, wantErr: "unknown placeholder"},
		{reason: "stray braces", in: "{{ .Namespace }", names: []string{"Namespace"}, wantErr: "braces outside a placeholder"},
		{reason: "a template action is not a placeholder", in: "{{ if .Namespace }}x{{ end }}", names: []string{"Namespace"}, wantErr: "braces outside a placeholder"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			err := placeholders.Check(tt.in, tt.names...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CheckPlaceholders(%q) = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("CheckPlaceholders(%q): %v", tt.in, err)
			}
			if got := placeholders.Expand(tt.in, v); got != tt.want {
				t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if !placeholders.Uses("x-{{ .Owner }}", placeholders.Owner) || placeholders.Uses("{{ .Namespace }}", placeholders.Owner) {
		t.Error("UsesPlaceholder does not tell which placeholders a value holds")
	}
	if !placeholders.Uses("{{ .Namespace }}-{{ .Profile }}-{{ .Owner }}", placeholders.Owner) {
		t.Error("Uses does not see a placeholder after the first")
	}
}

func TestOwnerKindAndLabels(t *testing.T) {
	v := placeholders.Values{
		Namespace: "team-a", Profile: "team-a", Owner: "alice@example.org", OwnerKind: "User",
		Labels: map[string]string{"example.org/team": "data", "tier": ""},
	}
	all := []string{placeholders.Namespace, placeholders.Owner, placeholders.OwnerKind, placeholders.Label}
	tests := []struct {
		reason      string
		in          string
		names       []string
		among       bool // CheckAmong rather than Check
		want        string
		wantMissing []string
		wantErr     string
	}{
		{reason: "the owner's kind", in: "{{ .OwnerKind }}:{{ .Owner }}", names: all, want: "User:alice@example.org"},
		{reason: "a label by key", in: `team-{{ .Label "example.org/team" }}`, names: all, want: "team-data"},
		{reason: "spaces inside the braces", in: `{{.Label "example.org/team"}}`, names: all, want: "data"},
		{reason: "a label that is there but empty", in: `x{{ .Label "tier" }}`, names: all, want: "x"},
		{reason: "a label the Profile does not carry", in: `{{ .Label "cost-center" }}-{{ .Label "cost-center" }}`, names: all, want: "-", wantMissing: []string{`{{ .Label "cost-center" }}`}},
		{reason: "Label without a key", in: "{{ .Label }}", names: all, wantErr: "needs a label key"},
		{reason: "Label with a key that is not a label key", in: `{{ .Label "a b" }}`, names: all, wantErr: `label key "a b"`},
		{reason: "a key on a placeholder that takes none", in: `{{ .Namespace "x" }}`, names: all, wantErr: "only {{ .Label \"key\" }} takes a key"},
		{reason: "Label where the plugin does not offer it", in: `{{ .Label "tier" }}`, names: []string{placeholders.Namespace}, wantErr: "unknown placeholder"},
		{reason: "Check refuses another template language", in: "{{ $labels.pod }}", names: all, wantErr: "braces outside a placeholder"},
		{reason: "CheckAmong leaves another template language alone", in: "{{ $labels.pod }} in {{ .Namespace }}", names: all, among: true, want: "{{ $labels.pod }} in team-a"},
		{reason: "CheckAmong still refuses a typo", in: "{{ .Namspace }}", names: all, among: true, wantErr: "unknown placeholder {{ .Namspace }}"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			check := placeholders.Check
			if tt.among {
				check = placeholders.CheckAmong
			}
			err := check(tt.in, tt.names...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("check(%q) = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("check(%q): %v", tt.in, err)
			}
			if got := placeholders.Expand(tt.in, v); got != tt.want {
				t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if diff := cmp.Diff(tt.wantMissing, placeholders.Missing(tt.in, v)); diff != "" {
				t.Errorf("Missing(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
	if got := placeholders.Missing("{{ .Owner }}/{{ .OwnerKind }}", placeholders.Values{}); len(got) != 2 {
		t.Errorf("Missing of a Profile without an owner = %v, want both owner placeholders", got)
	}
}
