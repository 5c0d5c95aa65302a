package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
)

// TestHelmPage renders the chart with the tenant page on: by the value
// page.enabled over a configuration without a page section, with the
// mesh's values changed, and by the configuration alone at another
// address. The objects follow the configuration the host reads, the
// ClusterRole grants what the page needs and, besides the plugins' needs,
// nothing else; a configuration whose page section leaves the page off
// while the value turns it on is refused.
func TestHelmPage(t *testing.T) {
	reg, scheme := registryAndScheme(t)
	dir := t.TempDir()
	configOnly := filepath.Join(dir, "page-9000.yaml")
	if err := os.WriteFile(configOnly, []byte("plugins:\n  quotas: {enabled: all}\npage:\n  enabled: true\n  address: \":9000\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	custom := pageMesh{gateway: "istio-system/tenants", prefix: "/namespace/", principal: "cluster.local/ns/gateways/sa/tenant-gateway"}
	for _, tc := range []struct {
		name string
		args []string
		mesh pageMesh
	}{
		{"value over the default configuration", []string{"--set", "page.enabled=true"}, kubeflowMesh},
		{"value over istio.yaml, another gateway", []string{"--set-file", "config=config/istio.yaml", "--set", "page.enabled=true",
			"--set", "page.gateway=" + custom.gateway, "--set", "page.prefix=" + custom.prefix, "--set", "page.gatewayPrincipal=" + custom.principal}, custom},
		{"configuration alone", []string{"--set-file", "config=" + configOnly}, kubeflowMesh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := helmTemplate(t, tc.args...)
			cm := one[corev1.ConfigMap](t, objs, "ConfigMap", "profilekit-config")
			cfg, err := hostconfig.Parse("ConfigMap "+cm.Name+" host.yaml", []byte(cm.Data["host.yaml"]), reg)
			if err != nil {
				t.Fatalf("the ConfigMap does not hold a valid host configuration: %v\n%s", err, cm.Data["host.yaml"])
			}
			if !cfg.Page.Enabled {
				t.Fatalf("the host's configuration leaves the page off:\n%s", cm.Data["host.yaml"])
			}
			checkDeployment(t, objs, cm.Name)
			cr, need := checkHostRBAC(t, reg, scheme, cfg, objs)
			checkNothingElse(t, cr, need)
			checkPage(t, cfg, objs, tc.mesh)
		})
	}
	checkMenuLink(t, kubeflowMesh.prefix)

	off := filepath.Join(dir, "page-off.yaml")
	if err := os.WriteFile(off, []byte("plugins:\n  quotas: {enabled: all}\npage:\n  enabled: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := helmCmd(t, "template", "profilekit", chartDir, "--set", "image.repository="+testImage, "--set-file", "config="+off, "--set", "page.enabled=true")
	if err == nil || !strings.Contains(err.Error(), "page section leaves the page off") {
		t.Errorf("page.enabled over a configuration that leaves the page off: %v, want it refused", err)
	}
}
