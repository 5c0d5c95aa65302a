package main

import (
	"strings"
	"testing"
)

// TestRenderReplicate renders the replicate plugin's copies from sources
// given with -f: the ConfigMap's filtered and renamed key in full, the
// Secret's key with its size only.
func TestRenderReplicate(t *testing.T) {
	code, out, stderr := runMain(t.Context(), "render", "--config", "config/host.yaml", "-f", "testdata/replicate-sources.yaml")
	if code != 0 {
		t.Fatalf("render: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"# profile: team-r, plugin: replicate\napiVersion: v1\ndata:\n  ca-bundle.crt: |\n    -----BEGIN CERTIFICATE-----\n    MIIBexample\n",
		"  .dockerconfigjson: (redacted, 74 bytes)\n",
		"type: kubernetes.io/dockerconfigjson",
		"replicate.profilekit.dev/from: platform-secrets/registry-pull",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	for _, never := range []string{"cmVuZGVyLXNlY3JldC12YWx1ZQ", "registry.example.org", "unrelated.txt"} {
		if strings.Contains(out, never) {
			t.Errorf("render output holds %q, which it must not:\n%s", never, out)
		}
	}

	code, out, stderr = runMain(t.Context(), "render", "--config", "config/host.yaml", "-f", "../profiles/team-a.yaml")
	if code != 0 || !strings.Contains(stderr, "note: profile team-a: plugin replicate: source registry-pull: Secret platform-secrets/registry-pull not found; give the sources with -f") {
		t.Errorf("render without the source: exit %d, stderr:\n%s", code, stderr)
	}
	if strings.Contains(out, "plugin: replicate") || !strings.Contains(out, "plugin: quotas") {
		t.Errorf("render without the source: want the other plugins' objects and no copy:\n%s", out)
	}
}
