package network_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/network"
)

// A host loads a preset as its defaults; Build shows what a Profile gets,
// and which gated policies stay off and why.
func ExampleBuild() {
	cfg, err := network.LoadConfig([]byte(`
policies:
- name: allow-same-namespace
  podSelector: {}
  policyTypes: [Ingress]
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: "{{ .Namespace }}"}}
- name: allow-gitea-ingress
  gate: {label: gitea.example.org/enabled}
  podSelector: {matchLabels: {app: gitea}}
  policyTypes: [Ingress]
  ingress: [{ports: [{protocol: TCP, port: 3000}]}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"gitea.example.org/enabled": "maybe"}}}
	d, err := network.Build(cfg, p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, np := range d.Policies {
		fmt.Println("on:", *np.Name, "from namespace", np.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"])
	}
	for _, g := range d.Off {
		fmt.Println("off:", g.Message())
	}
	// Output:
	// on: allow-same-namespace from namespace team-a
	// off: label gitea.example.org/enabled="maybe" is not true or false, so policy allow-gitea-ingress stays off
}

// The shipped presets are configuration, ready to be a host's defaults.
func ExamplePreset() {
	fmt.Println(network.Presets())
	data, err := network.Preset("isolated")
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := network.LoadConfig(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range cfg.Policies {
		fmt.Println(p.Name, p.PolicyTypes)
	}
	// Output:
	// [isolated multitenant statcan]
	// default-deny [Ingress Egress]
	// allow-same-namespace [Ingress Egress]
	// allow-dns [Egress]
	// allow-istiod [Egress]
	// allow-ingress-gateway [Ingress]
}
