package network_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/network"
)

// TestEffective checks how a host's policies combine with the preset it
// names: replaced in place by name, excluded by name, or added after it.
func TestEffective(t *testing.T) {
	without := func(drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(statcanPreset), func(n string) bool { return slices.Contains(drop, n) })
	}
	tests := []struct {
		reason string
		config string
		want   []string
		// cidr is the CIDR of allow-protected-b-https-egress, when wanted.
		cidr string
	}{
		{
			reason: "no preset: the host's policies only",
			config: `policies: [{name: own, podSelector: {}, policyTypes: [Ingress]}]`,
			want:   []string{"own"},
		},
		{
			reason: "a preset alone gives its policies in its order",
			config: `preset: statcan`,
			want:   statcanPreset,
			cidr:   "10.130.0.0/16",
		},
		{
			reason: "the host's own policies come after the preset's",
			config: `
preset: statcan
policies: [{name: allow-same-namespace, podSelector: {}, policyTypes: [Ingress], ingress: [{from: [{podSelector: {}}]}]}]`,
			want: append(slices.Clone(statcanPreset), "allow-same-namespace"),
			cidr: "10.130.0.0/16",
		},
		{
			reason: "a policy with a preset policy's name replaces it in place",
			config: `
preset: statcan
policies:
- name: allow-protected-b-https-egress
  podSelector: {matchLabels: {data.example.org/classification: protected-b}}
  policyTypes: [Egress]
  egress: [{to: [{ipBlock: {cidr: 10.20.0.0/16}}], ports: [{protocol: TCP, port: 443}]}]`,
			want: statcanPreset,
			cidr: "10.20.0.0/16",
		},
		{
			reason: "exclude leaves preset policies out",
			config: `
preset: statcan
exclude: [allow-elasticsearch-egress, allow-pipelines-egress]`,
			want: without("allow-elasticsearch-egress", "allow-pipelines-egress"),
			cidr: "10.130.0.0/16",
		},
	}
	// More policies of the host's own than the preset has.
	many := "preset: statcan\npolicies:\n"
	manyWant := slices.Clone(statcanPreset)
	for i := range len(statcanPreset) + 2 {
		name := fmt.Sprintf("own-%02d", i)
		many += "- {name: " + name + ", podSelector: {}, policyTypes: [Ingress]}\n"
		manyWant = append(manyWant, name)
	}
	tests = append(tests, struct {
		reason string
		config string
		want   []string
		cidr   string
	}{reason: "more policies of the host's own than the preset has", config: many, want: manyWant, cidr: "10.130.0.0/16"})
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg, err := network.LoadConfig([]byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			policies, err := cfg.Effective()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			cidr := ""
			for _, p := range policies {
				got = append(got, p.Name)
				if p.Name == "allow-protected-b-https-egress" {
					cidr = p.Egress[0].To[0].IPBlock.CIDR
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("policies (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.cidr, cidr); diff != "" {
				t.Errorf("allow-protected-b-https-egress CIDR (-want +got):\n%s", diff)
			}
			d, err := network.Build(cfg, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})
			if err != nil {
				t.Fatal(err)
			}
			var built []string
			for _, np := range d.Policies {
				built = append(built, *np.Name)
			}
			if diff := cmp.Diff(tc.want, built); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPresetValidation checks that a host's preset settings that cannot be
// meant fail at load, each with a line that names it.
func TestPresetValidation(t *testing.T) {
	tests := []struct {
		reason string
		config string
		want   string
	}{
		{"an unknown preset", `preset: statcann`, `preset: network preset "statcann": not one of [isolated multitenant statcan]`},
		{"exclude without a preset", `exclude: [allow-vault-egress]`, "exclude: needs a preset"},
		{"exclude names a policy the preset does not have", "preset: statcan\nexclude: [allow-vault]", `exclude[0]: preset statcan has no policy "allow-vault"`},
		{
			reason: "a policy both excluded and replaced",
			config: "preset: statcan\nexclude: [allow-vault-egress]\npolicies: [{name: allow-vault-egress, podSelector: {}, policyTypes: [Egress]}]",
			want:   `exclude[0]: "allow-vault-egress" is also under policies`,
		},
		{
			reason: "a replacement is validated like any policy",
			config: "preset: statcan\npolicies: [{name: allow-vault-egress, podSelector: {}, policyTypes: [Egress], egress: [{to: [{ipBlock: {cidr: 10.1.2.3/8}}]}]}]",
			want:   `policies[allow-vault-egress]: egress[0].to[0].ipBlock.cidr: "10.1.2.3/8" is not canonical`,
		},
		{
			reason: "a name given twice under policies is still an error with a preset",
			config: "preset: statcan\npolicies: [{name: own, podSelector: {}, policyTypes: [Egress]}, {name: own, podSelector: {}, policyTypes: [Egress]}]",
			want:   "policies[own]: name given twice",
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := network.LoadConfig([]byte(tc.config))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			if got := plugins.ReasonOf(err, ""); got != plugins.ReasonInvalidConfig {
				t.Errorf("reason = %q, want %q", got, plugins.ReasonInvalidConfig)
			}
		})
	}
}

// TestProfileCannotChoosePreset checks that the preset and its exclusions
// are the host's: a Profile that sets them is refused, so that a tenant
// cannot drop the policies that fence it in.
func TestProfileCannotChoosePreset(t *testing.T) {
	for _, spec := range []string{`{"preset":"isolated"}`, `{"exclude":["allow-unclassified-egress"]}`} {
		t.Run(spec, func(t *testing.T) {
			p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
			p.Spec.Plugins = []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: network.Kind}, Spec: &runtime.RawExtension{Raw: []byte(spec)}}}
			_, err := network.Definition().Decode([]byte(`{"preset":"statcan"}`), p)
			if err == nil || plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
				t.Fatalf("error = %v, want an InvalidSpec error", err)
			}
		})
	}
}
