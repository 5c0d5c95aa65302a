package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
)

// TestShippedConfigsLoad loads every example configuration against the
// plugins this binary is built with.
func TestShippedConfigsLoad(t *testing.T) {
	reg, err := plugins.NewRegistry(builtin.Definitions()...)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("config/*.yaml")
	if len(files) < 3 {
		t.Fatalf("want host.yaml, istio.yaml and statcan.yaml in config/, got %v", files)
	}
	for _, f := range files {
		if _, err := hostconfig.Load(f, reg); err != nil {
			t.Errorf("%v", err)
		}
	}
	// The demo runs istio.yaml to show every plugin that needs nothing
	// outside the cluster; each plugin that does (Argo CD and a database,
	// Azure and OPA, a cloud's IAM) is shown by a configuration of its own.
	var enabled []string
	for _, f := range []string{"config/istio.yaml", "config/argocd-apps.yaml", "config/statcan-storage.yaml", "config/cloud-identity.yaml", "config/templates.yaml", "config/lab-budgets.yaml"} {
		cfg, err := hostconfig.Load(f, reg)
		if err != nil {
			t.Fatal(err)
		}
		enabled = append(enabled, cfg.Enabled()...)
	}
	slices.Sort(enabled)
	enabled = slices.Compact(enabled)
	if diff := cmp.Diff(reg.Kinds(), enabled); diff != "" {
		t.Errorf("the shipped configurations do not enable every plugin built in (-built in +enabled):\n%s", diff)
	}
}

// TestStatCanRender renders a Profile of the StatCan-style platform and
// checks the platform's values arrive in the objects.
func TestStatCanRender(t *testing.T) {
	code, out, stderr := runMain(t.Context(), "render", "--config", "config/statcan.yaml", "-f", "testdata/statcan-profile.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden := "testdata/statcan-profile.golden.yaml"
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, fragment := range []string{
		"limits.cpu: \"32\"",                             // label override under quotas.statcan.gc.ca
		"requests.nvidia.com/gpu: \"1\"",                 // through the gpu alias
		"name: ml-support",                               // the support-group binding
		"data.statcan.gc.ca/classification: protected-b", // the Protected B PodDefault
		"name: allow-gitea-ingress",                      // label gate
		"name: allow-s3proxy-egress",                     // spec gate
		"name: deny-protected-b-file-transfers",
	} {
		if !strings.Contains(out, fragment) {
			t.Errorf("rendering lacks %q", fragment)
		}
	}
}
