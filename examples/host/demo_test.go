package main

import (
	"strings"
	"testing"
)

// TestDemo runs the whole demo on its own control plane: every step must
// happen as narrated, or the demo fails.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second control plane")
	}
	code, out, stderr := runMain(t.Context(), "demo", "--profiles", "../profiles")
	if code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	// Table columns are as wide as their content; compare words, not spaces.
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"control plane up in",
		"created Profile team-a",
		"CRDs to install: profiles.kubeflow.org, authorizationpolicies.security.istio.io",
		"quotas QuotasReady True Applied: 1 object in sync",
		"updated in place: limits.cpu=32",
		`QuotasReady=False "InvalidLabel: label quotas.profilekit.dev/limits.memory=\"lots\": not a quantity"`,
		"the quota is left as it was",
		"put it back in",
		"remove expose from spec.plugins",
		"Event: Normal Revoked (profilekit-expose): expose: 1 deleted",
		"set label profilekit.dev/rbac=off, which the rbac selector excludes",
		"Event: Normal Revoked (profilekit-rbac): rbac: 1 deleted",
		"objects remain, because this control plane runs no garbage collector",
		"(the deleted Profile)",
		"== Done",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", out)
	}
}
