package network

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

func profile(name string, labels map[string]string) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func mustLoad(t *testing.T, yaml string) *Config {
	t.Helper()
	cfg, err := LoadConfig([]byte(yaml))
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	return cfg
}

func all() *metav1ac.LabelSelectorApplyConfiguration { return metav1ac.LabelSelector() }

func nsIs(name string) *metav1ac.LabelSelectorApplyConfiguration {
	return metav1ac.LabelSelector().WithMatchLabels(map[string]string{"kubernetes.io/metadata.name": name})
}

func tcp(port int) *networkingv1ac.NetworkPolicyPortApplyConfiguration {
	return networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt(port))
}

const gated = `
policies:
- name: base
  podSelector: {}
  policyTypes: [Ingress]
- name: by-label
  gate: {label: example.org/extra}
  podSelector: {}
  policyTypes: [Egress]
- name: by-spec
  gate: {spec: extra}
  podSelector: {}
  policyTypes: [Egress]
`

func TestBuild(t *testing.T) {
	base := networkingv1ac.NetworkPolicy("base", "team-a").WithSpec(networkingv1ac.NetworkPolicySpec().
		WithPodSelector(all()).WithPolicyTypes(networkingv1.PolicyTypeIngress))
	byLabel := networkingv1ac.NetworkPolicy("by-label", "team-a").WithSpec(networkingv1ac.NetworkPolicySpec().
		WithPodSelector(all()).WithPolicyTypes(networkingv1.PolicyTypeEgress))
	bySpec := networkingv1ac.NetworkPolicy("by-spec", "team-a").WithSpec(networkingv1ac.NetworkPolicySpec().
		WithPodSelector(all()).WithPolicyTypes(networkingv1.PolicyTypeEgress))

	tests := []struct {
		reason  string
		config  string
		name    string
		gates   map[string]GateValue
		labels  map[string]string
		want    Desired
		wantErr string
	}{
		{
			reason: "placeholders become the Profile's namespace and name; policy types are written as given",
			config: `
policies:
- name: same-namespace
  podSelector:
    matchExpressions: [{key: owner, operator: In, values: ["{{ .Profile }}", "x-{{.Namespace}}"]}]
  policyTypes: [Ingress, Egress]
  ingress:
  - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: "{{ .Namespace }}"}}}]
  egress:
  - to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: "{{ .Namespace }}"}}, podSelector: {}}]
    ports: [{protocol: TCP, port: 443}]
`,
			want: Desired{Policies: []*networkingv1ac.NetworkPolicyApplyConfiguration{
				networkingv1ac.NetworkPolicy("same-namespace", "team-a").WithSpec(networkingv1ac.NetworkPolicySpec().
					WithPodSelector(metav1ac.LabelSelector().WithMatchExpressions(metav1ac.LabelSelectorRequirement().
						WithKey("owner").WithOperator(metav1.LabelSelectorOpIn).WithValues("team-a", "x-team-a"))).
					WithPolicyTypes(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress).
					WithIngress(networkingv1ac.NetworkPolicyIngressRule().WithFrom(networkingv1ac.NetworkPolicyPeer().WithNamespaceSelector(nsIs("team-a")))).
					WithEgress(networkingv1ac.NetworkPolicyEgressRule().
						WithTo(networkingv1ac.NetworkPolicyPeer().WithNamespaceSelector(nsIs("team-a")).WithPodSelector(all())).
						WithPorts(tcp(443)))),
			}},
		},
		{
			reason: "an allow-all rule stays one empty rule; empty from and ports lists are left out, not sent empty",
			config: `
policies:
- name: allow-all-ingress
  podSelector: {}
  policyTypes: [Ingress]
  ingress: [{}]
- name: empty-lists
  podSelector: {}
  policyTypes: [Ingress]
  ingress: [{from: [], ports: []}]
- name: deny-egress
  podSelector: {}
  policyTypes: [Egress]
  egress: []
`,
			want: Desired{Policies: []*networkingv1ac.NetworkPolicyApplyConfiguration{
				networkingv1ac.NetworkPolicy("allow-all-ingress", "team-a").WithSpec(networkingv1ac.NetworkPolicySpec().
					WithPodSelector(all()).WithPolicyTypes(networkingv1.PolicyTypeIngress).WithIngress(networkingv1ac.NetworkPolicyIngressRule())),
				networkingv1ac.NetworkPolicy("empty-lists", "team-a").WithSpec(networkingv1ac.NetworkPolicySpec().
					WithPodSelector(all()).WithPolicyTypes(networkingv1.PolicyTypeIngress).WithIngress(networkingv1ac.NetworkPolicyIngressRule())),
				networkingv1ac.NetworkPolicy("deny-egress", "team-a").WithSpec(networkingv1ac.NetworkPolicySpec().
					WithPodSelector(all()).WithPolicyTypes(networkingv1.PolicyTypeEgress)),
			}},
		},
		{
			reason: "ipBlocks keep their exceptions; port ranges and named ports pass through",
			config: `
policies:
- name: https-out
  podSelector: {matchLabels: {tier: web}}
  policyTypes: [Egress]
  egress:
  - to: [{ipBlock: {cidr: 0.0.0.0/0, except: [10.0.0.0/8, 192.168.0.0/16]}}]
    ports: [{protocol: TCP, port: 8000, endPort: 8100}, {port: metrics}]
`,
			want: Desired{Policies: []*networkingv1ac.NetworkPolicyApplyConfiguration{
				networkingv1ac.NetworkPolicy("https-out", "team-a").WithSpec(networkingv1ac.NetworkPolicySpec().
					WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"tier": "web"})).
					WithPolicyTypes(networkingv1.PolicyTypeEgress).
					WithEgress(networkingv1ac.NetworkPolicyEgressRule().
						WithTo(networkingv1ac.NetworkPolicyPeer().WithIPBlock(networkingv1ac.IPBlock().WithCIDR("0.0.0.0/0").WithExcept("10.0.0.0/8", "192.168.0.0/16"))).
						WithPorts(tcp(8000).WithEndPort(8100), networkingv1ac.NetworkPolicyPort().WithPort(intstr.FromString("metrics"))))),
			}},
		},
		{
			reason: "gates that are not set keep their policies off without complaint",
			config: gated,
			want: Desired{
				Policies: []*networkingv1ac.NetworkPolicyApplyConfiguration{base},
				Off:      []Gated{{Policy: "by-label", Source: "label example.org/extra"}, {Policy: "by-spec", Source: "gates[extra]"}},
			},
		},
		{
			reason: "gates that parse as true turn their policies on",
			config: gated,
			labels: map[string]string{"example.org/extra": "True"},
			gates:  map[string]GateValue{"extra": "1"},
			want:   Desired{Policies: []*networkingv1ac.NetworkPolicyApplyConfiguration{base, byLabel, bySpec}},
		},
		{
			reason: "false is off and valid",
			config: gated,
			labels: map[string]string{"example.org/extra": "false"},
			gates:  map[string]GateValue{"extra": "false"},
			want: Desired{
				Policies: []*networkingv1ac.NetworkPolicyApplyConfiguration{base},
				Off: []Gated{
					{Policy: "by-label", Source: "label example.org/extra", Value: "false"},
					{Policy: "by-spec", Source: "gates[extra]", Value: "false"},
				},
			},
		},
		{
			reason: "a value that is not a boolean fails closed and is marked invalid",
			config: gated,
			labels: map[string]string{"example.org/extra": "maybe"},
			gates:  map[string]GateValue{"extra": "yes"},
			want: Desired{
				Policies: []*networkingv1ac.NetworkPolicyApplyConfiguration{base},
				Off: []Gated{
					{Policy: "by-label", Source: "label example.org/extra", Value: "maybe", Invalid: true},
					{Policy: "by-spec", Source: "gates[extra]", Value: "yes", Invalid: true},
				},
			},
		},
		{
			reason: "a label value made too long by the Profile's name is a terminal InvalidSpec error",
			config: `
policies:
- name: long
  podSelector: {matchLabels: {owner: "{{ .Profile }}-sssssssssssssssssssssssssssssssssssssssssssssssssssssss"}}
  policyTypes: [Ingress]
`,
			name:    "team-abcd",
			wantErr: "policy long: podSelector: values[0][owner]",
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg := mustLoad(t, tc.config)
			cfg.Gates = tc.gates
			name := tc.name
			if name == "" {
				name = "team-a"
			}
			got, err := Build(cfg, profile(name, tc.labels))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
					t.Fatalf("error = %v, want an InvalidSpec error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGatedMessage(t *testing.T) {
	g := Gated{Policy: "allow-gitea", Source: "label example.org/gitea", Value: "maybe", Invalid: true}
	want := `label example.org/gitea="maybe" is not true or false, so policy allow-gitea stays off`
	if got := g.Message(); got != want {
		t.Errorf("Message() = %q, want %q", got, want)
	}
	if got := g.Reason(); got != plugins.ReasonInvalidLabel {
		t.Errorf("Reason() of a label gate = %q, want %s", got, plugins.ReasonInvalidLabel)
	}
	if got := (Gated{Source: "gates[extra]"}).Reason(); got != plugins.ReasonInvalidSpec {
		t.Errorf("Reason() of a spec gate = %q, want %s", got, plugins.ReasonInvalidSpec)
	}
}

// TestLoadConfigAcceptsPortBounds: a range of one port and a range that
// ends at the highest port are ranges.
func TestLoadConfigAcceptsPortBounds(t *testing.T) {
	for _, ports := range []string{`{port: 80, endPort: 80}`, `{port: 1024, endPort: 65535}`} {
		config := `{policies: [{name: a, podSelector: {}, policyTypes: [Egress], egress: [{ports: [` + ports + `]}]}]}`
		if _, err := LoadConfig([]byte(config)); err != nil {
			t.Errorf("ports %s: %v", ports, err)
		}
	}
}

func TestLoadConfigRejects(t *testing.T) {
	tests := []struct {
		reason string
		config string
		want   string
	}{
		{"unknown placeholder", `{policies: [{name: a, podSelector: {matchLabels: {x: "{{ .Owner }}"}}, policyTypes: [Ingress]}]}`, "unknown placeholder {{ .Owner }}"},
		{"malformed placeholder", `{policies: [{name: a, podSelector: {matchLabels: {x: "{{ .Namespace }"}}, policyTypes: [Ingress]}]}`, "braces outside a placeholder"},
		{"placeholder in a key", `{policies: [{name: a, podSelector: {matchLabels: {"{{ .Namespace }}": x}}, policyTypes: [Ingress]}]}`, "placeholders go in values only"},
		{"policy types missing", `{policies: [{name: a, podSelector: {}}]}`, "policyTypes: must be given"},
		{"unknown policy type", `{policies: [{name: a, podSelector: {}, policyTypes: [Sideways]}]}`, `"Sideways" is not Ingress or Egress`},
		{"rules of a missing type", `{policies: [{name: a, podSelector: {}, policyTypes: [Ingress], egress: [{}]}]}`, "egress rules without policy type Egress"},
		{"duplicate names", `{policies: [{name: a, podSelector: {}, policyTypes: [Ingress]}, {name: a, podSelector: {}, policyTypes: [Egress]}]}`, "policies[a]: name given twice"},
		{"upstream name", `{policies: [{name: ns-owner-access-istio, podSelector: {}, policyTypes: [Ingress]}]}`, "belongs to the upstream profile controller"},
		{"non-canonical cidr", `{policies: [{name: a, podSelector: {}, policyTypes: [Egress], egress: [{to: [{ipBlock: {cidr: 10.1.2.3/8}}]}]}]}`, `"10.1.2.3/8" is not canonical, write 10.0.0.0/8`},
		{"exception outside its block", `{policies: [{name: a, podSelector: {}, policyTypes: [Egress], egress: [{to: [{ipBlock: {cidr: 10.0.0.0/8, except: [192.168.0.0/16]}}]}]}]}`, "192.168.0.0/16 is not strictly inside 10.0.0.0/8"},
		{"exception that is the block itself", `{policies: [{name: a, podSelector: {}, policyTypes: [Egress], egress: [{to: [{ipBlock: {cidr: 10.0.0.0/8, except: [10.0.0.0/8]}}]}]}]}`, "10.0.0.0/8 is not strictly inside 10.0.0.0/8"},
		{"ipBlock with a selector", `{policies: [{name: a, podSelector: {}, policyTypes: [Egress], egress: [{to: [{ipBlock: {cidr: 10.0.0.0/8}, podSelector: {}}]}]}]}`, "ipBlock cannot be combined with a selector"},
		{"empty peer", `{policies: [{name: a, podSelector: {}, policyTypes: [Egress], egress: [{to: [{}]}]}]}`, "set podSelector, namespaceSelector or ipBlock"},
		{"bad protocol", `{policies: [{name: a, podSelector: {}, policyTypes: [Egress], egress: [{ports: [{protocol: ICMP}]}]}]}`, `"ICMP" is not TCP, UDP or SCTP`},
		{"end port below port", `{policies: [{name: a, podSelector: {}, policyTypes: [Egress], egress: [{ports: [{port: 90, endPort: 80}]}]}]}`, "endPort: needs a numeric port not above it"},
		{"gate with both sources", `{policies: [{name: a, gate: {label: x, spec: other}, podSelector: {}, policyTypes: [Ingress]}]}`, "set exactly one of label and spec"},
		{"spec gate nobody uses", `{gates: {typo: true}, policies: [{name: a, podSelector: {}, policyTypes: [Ingress]}]}`, "gates[typo]: no policy has a spec gate of that name"},
		{"unknown field", `{policies: [{name: a, podSelector: {}, policyTypes: [Ingress], ingres: []}]}`, `unknown field "policies[0].ingres"`},
		{"invalid selector operator", `{policies: [{name: a, podSelector: {matchExpressions: [{key: x, operator: Near}]}, policyTypes: [Ingress]}]}`, `"Near" is not a valid label selector operator`},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := LoadConfig([]byte(tc.config))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			if plugins.ReasonOf(err, "") != plugins.ReasonInvalidConfig {
				t.Errorf("reason = %q, want %s", plugins.ReasonOf(err, ""), plugins.ReasonInvalidConfig)
			}
		})
	}
}

func TestProfileMaySetGatesOnly(t *testing.T) {
	defaults := []byte(`{"policies":[{"name":"x","gate":{"spec":"extra"},"podSelector":{},"policyTypes":["Egress"]}]}`)
	tests := []struct {
		reason string
		spec   string
		want   string
	}{
		{"a spec gate the host offers is accepted", `{"gates":{"extra":true}}`, ""},
		{"a string gate value is accepted for reporting later", `{"gates":{"extra":"maybe"}}`, ""},
		{"policies are the host's", `{"policies":[]}`, `field "policies" is set by the host only`},
		{"a gate value must be a boolean or a string", `{"gates":{"extra":3}}`, "want a boolean or a string"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			p := profile("team-a", nil)
			p.Spec.Plugins = []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: Kind}, Spec: &runtime.RawExtension{Raw: []byte(tc.spec)}}}
			_, err := Definition().Decode(defaults, p)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
				t.Fatalf("error = %v, want an InvalidSpec error containing %q", err, tc.want)
			}
		})
	}
}

// TestPresetsAndExamplesLoad checks that every shipped preset and the
// documented StatCan-style example decode strictly and validate, and that
// each has the policies it promises.
func TestPresetsAndExamplesLoad(t *testing.T) {
	statcan, err := os.ReadFile("testdata/statcan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	isolated, err := Preset("isolated")
	if err != nil {
		t.Fatal(err)
	}
	multitenant, err := Preset("multitenant")
	if err != nil {
		t.Fatal(err)
	}
	statcanPreset, err := Preset("statcan")
	if err != nil {
		t.Fatal(err)
	}
	// The ten policies of the StatCan-style platform, in the preset's order.
	ten := []string{
		"allow-gateway-ingress", "allow-knative-ingress", "allow-cluster-local-gateway-egress",
		"allow-unclassified-egress", "allow-unclassified-gateway-egress", "allow-protected-b-https-egress",
		"allow-vault-egress", "allow-pipelines-egress", "allow-elasticsearch-egress", "allow-artifactory-egress",
	}
	tests := []struct {
		reason string
		data   []byte
		want   []string
	}{
		{"isolated", isolated, []string{"default-deny", "allow-same-namespace", "allow-dns", "allow-istiod", "allow-ingress-gateway"}},
		{"multitenant", multitenant, []string{"default-deny", "allow-same-namespace", "allow-dns", "allow-from-trusted", "allow-to-trusted"}},
		{"statcan preset", statcanPreset, ten},
		{"statcan example: the preset, then the platform's own policies", statcan, append(slices.Clone(ten),
			"allow-same-namespace", "allow-system-to-notebook",
			"allow-gitea-ingress", "allow-gitea-egress-postgres", "allow-s3proxy-ingress", "allow-s3proxy-egress",
		)},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg, err := LoadConfig(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			policies, err := cfg.Effective()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range policies {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("policies (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff([]string{"isolated", "multitenant", "statcan"}, Presets()); diff != "" {
		t.Errorf("Presets (-want +got):\n%s", diff)
	}
	if _, err := Preset("open"); err == nil {
		t.Error("Preset(open) succeeded, want an error naming the presets")
	}
}
