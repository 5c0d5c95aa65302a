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
	for _, want := range []string{
		"control plane up in",
		"created Profile team-a",
		"QuotasReady  True    Applied: 1 objects in sync",
		"updated in place: limits.cpu=32",
		`QuotasReady=False "InvalidLabel: label quotas.profilekit.dev/limits.memory=\"lots\": not a quantity"`,
		"the quota is left as it was",
		"Revoke deleted the plugin's objects",
		"Event: Normal Revoked (profilekit-limitrange): limitrange: 1 deleted",
		"objects remain, because this control plane runs no garbage collector",
		"(the deleted Profile)",
		"== Done",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", out)
	}
}
