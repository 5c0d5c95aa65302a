package blobcsi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestGrantsSourceHangingFromTheStartSaysWhy: an OPA gateway that accepts
// connections and never answers, from the host's start. Each Profile first
// says that the source has not answered yet, and then, within the client's
// timeout, why.
func TestGrantsSourceHangingFromTheStartSaysWhy(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); hang.Close() })
	cfg := hostConfig(t, map[string]any{"grantSources": []any{map[string]any{
		"name": "unclassified", "instance": "standard",
		"opa": map[string]any{"url": hang.URL, "path": "storage/grants/unclassified", "interval": pollEvery.String()},
	}}})
	h := start(t, cfg, reconcilers.WithResync(time.Hour))
	a := unique("team-a")
	h.profile(t, a, blobPlugin("standard"))
	first := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, blobcsi.ReasonGrantsNotSynced)
	t.Logf("at first: %s", first.Message)
	cond := first
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		cond = testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, blobcsi.ReasonGrantsNotSynced)
		return strings.Contains(cond.Message, "Unreachable"), "condition: " + cond.Message
	})
	t.Logf("within the timeout: %s", cond.Message)
}
