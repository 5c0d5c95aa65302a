package network_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/network"
)

// statcanPreset names the ten policies of the statcan preset, in its order.
var statcanPreset = []string{
	"allow-gateway-ingress",
	"allow-knative-ingress",
	"allow-cluster-local-gateway-egress",
	"allow-unclassified-egress",
	"allow-unclassified-gateway-egress",
	"allow-protected-b-https-egress",
	"allow-vault-egress",
	"allow-pipelines-egress",
	"allow-elasticsearch-egress",
	"allow-artifactory-egress",
}

const classification = "data.statcan.gc.ca/classification"

var (
	protectedB   = map[string]string{classification: "protected-b", "app": "notebook"}
	unclassified = map[string]string{classification: "unclassified", "app": "notebook"}
	unlabelled   = map[string]string{"app": "notebook"}
	inference    = map[string]string{"serving.knative.dev/service": "model"}
)

// statcanPolicies builds the statcan preset, alone, for one Profile.
func statcanPolicies(t *testing.T, profile string) network.Desired {
	t.Helper()
	data, err := network.Preset("statcan")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := network.LoadConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	d, err := network.Build(cfg, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: profile}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStatCanGates checks what the statcan preset lets through, workload by
// workload: the classification label decides between the internet and the
// approved cloud network, and every shared service is reachable on its
// ports only.
func TestStatCanGates(t *testing.T) {
	const ns = "stats-team"
	d := statcanPolicies(t, ns)
	var names []string
	for _, np := range d.Policies {
		names = append(names, *np.Name)
	}
	if diff := cmp.Diff(statcanPreset, names); diff != "" {
		t.Fatalf("policies (-want +got):\n%s", diff)
	}
	policies := typed(t, d)

	self := func(l map[string]string) endpoint { return podIn(ns, l) }
	gateway := podIn("istio-system", map[string]string{"istio": "ingressgateway"})
	localGateway := podIn("istio-system", map[string]string{"istio": "cluster-local-gateway"})
	vault := podIn("vault-system", map[string]string{"app.kubernetes.io/name": "vault"})
	pipelines := podIn("kubeflow", map[string]string{"app": "ml-pipeline"})
	elastic := podIn("daaas", map[string]string{"common.k8s.elastic.co/type": "elasticsearch"})
	artifactory := podIn("artifactory-system", map[string]string{"app": "artifactory"})
	activator := podIn("knative-serving", map[string]string{"app": "activator"})

	tests := []struct {
		reason   string
		src, dst endpoint
		port     int32
		want     bool
	}{
		// Egress to the internet and the cloud network, by classification.
		{"unclassified workloads reach the internet on any port", self(unclassified), address("203.0.113.10"), 80, true},
		{"a workload without the label is unclassified and reaches the internet", self(unlabelled), address("203.0.113.10"), 443, true},
		{"protected B workloads do not reach the internet, not even on 443", self(protectedB), address("203.0.113.10"), 443, false},
		{"protected B workloads reach HTTPS on the approved cloud network", self(protectedB), address("10.130.4.20"), 443, true},
		{"protected B workloads do not reach the range excepted from the cloud network", self(protectedB), address("10.130.200.5"), 443, false},
		{"protected B workloads reach the cloud network on 443 only", self(protectedB), address("10.130.4.20"), 80, false},
		{"unclassified workloads do not reach the cloud network: the private ranges are out of their internet", self(unclassified), address("10.130.4.20"), 443, false},
		{"unclassified workloads do not reach other private ranges", self(unlabelled), address("192.168.1.10"), 443, false},

		// Egress to the gateways.
		{"unclassified workloads reach the ingress gateway", self(unclassified), gateway, 443, true},
		{"a workload without the label reaches the ingress gateway", self(unlabelled), gateway, 8443, true},
		{"protected B workloads do not reach the ingress gateway", self(protectedB), gateway, 443, false},
		{"protected B workloads reach the cluster-local gateway", self(protectedB), localGateway, 80, true},
		{"unclassified workloads reach the cluster-local gateway", self(unclassified), localGateway, 80, true},
		{"a pod of istio-system that is not a gateway is out of reach", self(unclassified), podIn("istio-system", map[string]string{"app": "istiod"}), 15012, false},

		// Egress to the platform's services, for every classification.
		{"protected B workloads reach Vault on its port", self(protectedB), vault, 8200, true},
		{"unclassified workloads reach Vault on its port", self(unclassified), vault, 8200, true},
		{"Vault on another port is out of reach", self(protectedB), vault, 8201, false},
		{"a pod labelled like Vault in another namespace is not Vault", self(protectedB), podIn("team-b", map[string]string{"app.kubernetes.io/name": "vault"}), 8200, false},
		{"pipelines' HTTP API", self(protectedB), pipelines, 8888, true},
		{"pipelines' gRPC API", self(unclassified), pipelines, 8887, true},
		{"pipelines on another port is out of reach", self(protectedB), pipelines, 9000, false},
		{"other pods of the kubeflow namespace are out of reach", self(protectedB), podIn("kubeflow", map[string]string{"app": "centraldashboard"}), 8888, false},
		{"Elasticsearch on its HTTP port", self(protectedB), elastic, 9200, true},
		{"Elasticsearch's transport port is out of reach", self(protectedB), elastic, 9300, false},
		{"Artifactory on 8081", self(protectedB), artifactory, 8081, true},
		{"Artifactory on 8082", self(unclassified), artifactory, 8082, true},
		{"Artifactory on 443 is out of reach", self(protectedB), artifactory, 443, false},
		{"another Profile's namespace is out of reach", self(unclassified), podIn("team-b", unlabelled), 8888, false},

		// Ingress.
		{"the ingress gateway reaches protected B workloads", gateway, self(protectedB), 8888, true},
		{"the ingress gateway reaches unclassified workloads", gateway, self(unlabelled), 8888, true},
		{"other pods of istio-system do not reach in", podIn("istio-system", map[string]string{"app": "istiod"}), self(unlabelled), 8888, false},
		{"knative's activator reaches inference services", activator, self(inference), 8012, true},
		{"the cluster-local gateway reaches inference services", localGateway, self(inference), 8012, true},
		{"knative's activator does not reach notebooks", activator, self(unlabelled), 8888, false},
		{"another Profile does not reach in", podIn("team-b", unlabelled), self(unlabelled), 8888, false},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got := reaches(t, policies, ns, tc.src, tc.dst, tc.port)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%+v -> %+v port %d (-want +got):\n%s", tc.src, tc.dst, tc.port, diff)
			}
		})
	}
}

// TestReaches checks the model that TestStatCanGates reads the policies
// with, on policies whose answers are known.
func TestReaches(t *testing.T) {
	cfg, err := network.LoadConfig([]byte(`
policies:
- name: locked
  podSelector: {matchLabels: {locked: "true"}}
  policyTypes: [Egress]
- name: web-ingress
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress:
  - from: [{podSelector: {matchLabels: {app: client}}}]
    ports: [{port: 8080}, {protocol: TCP, port: 9000, endPort: 9009}, {protocol: UDP, port: 53}]
  - from:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
      podSelector: {matchLabels: {app: prometheus}}
- name: client-egress
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress:
  - to:
    - ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}
    - podSelector: {matchLabels: {app: web}}
`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := network.Build(cfg, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "lab"}})
	if err != nil {
		t.Fatal(err)
	}
	policies := typed(t, d)
	client := podIn("lab", map[string]string{"app": "client"})
	web := podIn("lab", map[string]string{"app": "web"})
	open := podIn("lab", map[string]string{"app": "other"})
	prometheus := map[string]string{"app": "prometheus"}
	tests := []struct {
		reason   string
		src, dst endpoint
		port     int32
		want     bool
	}{
		{"a pod that no policy selects is open", open, address("203.0.113.1"), 1, true},
		{"a policy without rules denies its direction", podIn("lab", map[string]string{"locked": "true"}), address("203.0.113.1"), 443, false},
		{"both directions allow: a listed port", client, web, 8080, true},
		{"a port that is not listed", client, web, 8081, false},
		{"a port inside a range", client, web, 9005, true},
		{"a port past a range", client, web, 9010, false},
		{"a UDP port does not open TCP", client, web, 53, false},
		{"a pod selector without a namespace selector means the policy's namespace", podIn("elsewhere", map[string]string{"app": "client"}), web, 8080, false},
		{"egress open but ingress closed", open, web, 8080, false},
		{"egress to a pod of the same labels in another namespace", client, podIn("elsewhere", map[string]string{"app": "web"}), 8080, false},
		{"an ipBlock holds its addresses", client, address("10.2.3.4"), 1, true},
		{"an ipBlock leaves out its exceptions", client, address("10.1.3.4"), 1, false},
		{"an address outside every ipBlock", client, address("203.0.113.1"), 443, false},
		{"a namespace and pod selector together: both match, no ports means every port", podIn("monitoring", prometheus), web, 12345, true},
		{"a namespace and pod selector together: the namespace does not match", podIn("other", prometheus), web, 12345, false},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, reaches(t, policies, "lab", tc.src, tc.dst, tc.port)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
