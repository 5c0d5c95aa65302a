package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStatCanNetworkRender renders a sample Profile with the StatCan-style
// configuration and compares its NetworkPolicies, and only those, with
// testdata/statcan-network.golden.yaml: the ten policies of the statcan
// preset and the two the configuration adds.
func TestStatCanNetworkRender(t *testing.T) {
	const profile = "../profiles/sandbox.yaml"
	code, out, stderr := runMain(t.Context(), "render", "--config", "config/statcan.yaml", "-f", profile)
	if code != 0 {
		t.Fatalf("render %s: exit %d\n%s", profile, code, stderr)
	}
	var docs []string
	for _, doc := range strings.Split(out, "---\n") {
		if strings.HasPrefix(doc, "# profile: sandbox, plugin: network\n") {
			docs = append(docs, doc)
		}
	}
	got := strings.Join(docs, "---\n")

	golden := "testdata/statcan-network.golden.yaml"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("network policies of %s differ from %s (-want +got):\n%s", profile, golden, diff)
	}

	// The golden file could be rewritten with anything; the set it holds
	// is checked on its own.
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^kind: NetworkPolicy\n(?:.*\n)*?  name: (\S+)\n`).FindAllStringSubmatch(got, -1) {
		names = append(names, m[1])
	}
	wantNames := []string{
		"allow-artifactory-egress",
		"allow-cluster-local-gateway-egress",
		"allow-elasticsearch-egress",
		"allow-gateway-ingress",
		"allow-knative-ingress",
		"allow-pipelines-egress",
		"allow-protected-b-https-egress",
		"allow-same-namespace",     // the configuration's own
		"allow-system-to-notebook", // the configuration's own
		"allow-unclassified-egress",
		"allow-unclassified-gateway-egress",
		"allow-vault-egress",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("NetworkPolicies rendered (-want +got):\n%s", diff)
	}
	for _, fragment := range []string{
		"- key: data.statcan.gc.ca/classification\n      operator: NotIn", // unclassified egress and gateway
		"data.statcan.gc.ca/classification: protected-b",                  // Protected B HTTPS
		"istio: cluster-local-gateway",
		"kubernetes.io/metadata.name: knative-serving",
	} {
		if !strings.Contains(got, fragment) {
			t.Errorf("network policies lack %q", fragment)
		}
	}
}
