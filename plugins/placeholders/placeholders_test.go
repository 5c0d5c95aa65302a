package placeholders_test

import (
	"strings"
	"testing"

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
}
