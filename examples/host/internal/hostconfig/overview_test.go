package hostconfig_test

import (
	"strings"
	"testing"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
)

func TestPageOverviewSection(t *testing.T) {
	tests := []struct {
		reason  string
		url     string
		wantErr string
	}{
		{reason: "no dashboard link by default", url: ""},
		{reason: "Grafana on its own host", url: "https://grafana.example.org/d/profilekit/profilekit?orgId=1"},
		{reason: "Grafana behind the gateway, on the page's host", url: "/grafana/d/profilekit/profilekit"},
		{reason: "a script is no address", url: "javascript:alert(1)", wantErr: `host.yaml: page.overview.grafanaURL: want an http(s) address`},
		{reason: "a protocol-relative address names no scheme", url: "//grafana.example.org/d/profilekit", wantErr: `page.overview.grafanaURL: want an http(s) address`},
		{reason: "a relative path depends on where the page is mounted", url: "grafana/d/profilekit", wantErr: `page.overview.grafanaURL: want an http(s) address`},
		{reason: "an address that does not parse", url: "https://grafana.example.org/%zz", wantErr: `page.overview.grafanaURL: parse`},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			yaml := "page: {enabled: true, overview: {grafanaURL: '" + tt.url + "'}}\nplugins: {quotas: {}}\n"
			cfg, err := hostconfig.Parse("host.yaml", []byte(yaml), registry(t))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse: %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := cfg.Page.Overview.GrafanaURL; got != tt.url {
				t.Errorf("grafanaURL = %q, want %q", got, tt.url)
			}
		})
	}
}

// TestPageOverviewUnknownField: the overview's section is strict like the
// rest of the file.
func TestPageOverviewUnknownField(t *testing.T) {
	_, err := hostconfig.Parse("host.yaml", []byte("page: {overview: {grafana: /g}}\nplugins: {quotas: {}}\n"), registry(t))
	if err == nil || !strings.Contains(err.Error(), "page.overview.grafana: unknown field") {
		t.Errorf("Parse: %v, want page.overview.grafana: unknown field", err)
	}
}
