package server

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
)

// TestOverviewOptions: the overview is told the Grafana address, the
// rollout's namespace only when the host has rollout settings, and the
// budgets only while the budgets plugin runs.
func TestOverviewOptions(t *testing.T) {
	reg, err := plugins.NewRegistry(builtin.Definitions()...)
	if err != nil {
		t.Fatal(err)
	}
	const budgets = `
  budgets:
    enabled: %s
    defaults:
      budgets:
      - name: vision
        profileSelector: {matchLabels: {lab: vision}}
        hard: {requests.cpu: "16"}
`
	for _, tc := range []struct {
		reason, yaml       string
		wantNamespace      string
		wantBudgets        []string
		wantGrafana        string
		wantSectionsOfKind []string
	}{
		{
			reason: "a rollout, budgets on, a dashboard",
			yaml: "leaderElection: {namespace: profilekit-system}\nrollout: {batch: 10%}\npage: {enabled: true, overview: {grafanaURL: /grafana/d/profilekit/profilekit}}\nplugins:\n  quotas: {enabled: all}\n" +
				fmt.Sprintf(budgets, "all"),
			wantNamespace: "profilekit-system", wantBudgets: []string{"vision"}, wantGrafana: "/grafana/d/profilekit/profilekit",
			wantSectionsOfKind: []string{"budgets", "quotas"},
		},
		{
			reason:             "no rollout settings, budgets off",
			yaml:               "leaderElection: {namespace: profilekit-system}\npage: {enabled: true}\nplugins:\n  quotas: {enabled: all}\n" + fmt.Sprintf(budgets, "off"),
			wantSectionsOfKind: []string{"budgets", "quotas"},
		},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			cfg, err := hostconfig.Parse("host.yaml", []byte(tc.yaml), reg)
			if err != nil {
				t.Fatal(err)
			}
			o, err := overviewOptions(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, b := range o.Budgets {
				names = append(names, b.Name)
				if q := b.Hard[corev1.ResourceRequestsCPU]; q.String() != "16" {
					t.Errorf("budget %s: requests.cpu %s, want 16", b.Name, q.String())
				}
			}
			got := []any{o.RolloutNamespace, names, o.GrafanaURL, slices.Sorted(maps.Keys(o.Sections))}
			want := []any{tc.wantNamespace, tc.wantBudgets, tc.wantGrafana, tc.wantSectionsOfKind}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rollout namespace, budgets, Grafana, sections (-want +got):\n%s", diff)
			}
		})
	}
}
