package blobcsi_test

// This file holds the tests of failures that delete nothing: a grants source
// that is down or answers badly, a stopped Azurite, a busy blob service, and
// an invalid spec.

import (
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

func TestGrantsSourceFailuresDeleteNothing(t *testing.T) {
	t.Parallel()
	a, b := unique("team-a"), unique("team-b")
	doc := grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a}, "labour": {b}},
		Buckets: map[string]map[string]any{
			"census-shared": {"classification": "unclassified", "readers": []string{"census"}, "writers": []string{"labour"}, "spn": "sp"},
		},
	}
	putGrants(t, doc)
	h := start(t, hostConfig(t, nil), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	h.profile(t, b, blobPlugin())
	wantA := map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadOnlyMany"}
	wantB := map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadWriteMany"}
	waitClaims(t, a, wantA)
	waitClaims(t, b, wantB)
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")

	stale := func(t *testing.T, reason string) {
		t.Helper()
		for _, n := range []string{a, b} {
			cond := testhost.WaitCondition(t, env.Client, n, condType, plugins.ConditionFalse, reason)
			if !strings.Contains(cond.Message, blobcsi.ReasonGrantsStale) {
				t.Errorf("%s condition %q does not say the grants are stale", n, cond.Message)
			}
		}
		// Several polls later, nothing was deleted.
		time.Sleep(3 * pollEvery)
		if got := liveClaims(t, a); !cmp.Equal(wantA, got) {
			t.Errorf("claims of %s = %v, want %v kept", a, got, wantA)
		}
		if got := liveClaims(t, b); !cmp.Equal(wantB, got) {
			t.Errorf("claims of %s = %v, want %v kept", b, got, wantB)
		}
		if n := refreshes(t, serversOf(t).source, reason); n == 0 {
			t.Errorf("profilekit_grants_refresh_total{result=%s} = 0", reason)
		}
	}
	recovered := func(t *testing.T) {
		t.Helper()
		putGrants(t, doc)
		for _, n := range []string{a, b} {
			testhost.WaitCondition(t, env.Client, n, condType, plugins.ConditionTrue, "")
		}
	}

	t.Run("OPA stopped", func(t *testing.T) {
		if err := serversOf(t).opa.Stop(); err != nil {
			t.Fatal(err)
		}
		stale(t, "Unreachable")
		// A Profile the kept grants do not name has nothing of the source
		// to keep: it converges during the outage and hears nothing of it.
		c := unique("team-c")
		h.profile(t, c, blobPlugin())
		waitClaims(t, c, map[string]string{"standard": "ReadWriteMany"})
		testhost.WaitCondition(t, env.Client, c, condType, plugins.ConditionTrue, "")
		if err := serversOf(t).opa.Start(); err != nil {
			t.Fatal(err)
		}
		// The restarted server serves the policy file, not the pushed data
		// (undefined), until the data are pushed again.
		recovered(t)
	})
	t.Run("malformed result", func(t *testing.T) {
		bad := doc
		bad.Buckets = map[string]map[string]any{"Census_Shared": {"classification": "unclassified", "readers": []string{"census"}}}
		putGrants(t, bad)
		stale(t, "Malformed")
		recovered(t)
	})
	t.Run("empty after non-empty", func(t *testing.T) {
		empty := doc
		empty.Buckets = map[string]map[string]any{}
		putGrants(t, empty)
		stale(t, "DropTooLarge")
		recovered(t)
	})
}

func TestAzuriteStoppedIsRetried(t *testing.T) {
	t.Parallel()
	az := ownAzurite(t)
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	h := start(t, hostConfig(t, nil), reconcilers.WithResync(time.Hour))
	if err := az.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = az.Start()
		}
	}()
	a := unique("team-a")
	h.profile(t, a, blobPlugin())
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "AzureBlob")
	t.Logf("while Azurite is stopped: %s", cond.Message)
	if got := liveClaims(t, a); len(got) != 0 {
		t.Errorf("claims written before their container exists: %v", got)
	}
	if err := az.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	// Retried with backoff: no change to the Profile is needed.
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany"})
	if !slices.Contains(containers(t), a) {
		t.Errorf("container %s missing after recovery", a)
	}
}

// busyOnce answers the first container creation with 503 Server Busy and
// holds the next one until release is closed.
type busyOnce struct {
	inner   http.RoundTripper
	release chan struct{}
	creates atomic.Int32
}

func (b *busyOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	q := r.URL.Query()
	if r.Method != http.MethodPut || q.Get("restype") != "container" || q.Has("comp") {
		return b.inner.RoundTrip(r)
	}
	switch b.creates.Add(1) {
	case 1:
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Server Busy",
			Header: http.Header{"X-Ms-Error-Code": {"ServerBusy"}}, Body: http.NoBody, Request: r}, nil
	case 2:
		select {
		case <-b.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return b.inner.RoundTrip(r)
}

// TestAzureBusyFailsThePass: a 503 from the blob service fails the pass that
// asked, on the condition, and a later pass asks again. The SDK makes one
// try: retrying inside the pass would hold a worker through the SDK's own
// backoff and hide the outage from the condition, which here holds the
// second try until the condition has told the 503.
func TestAzureBusyFailsThePass(t *testing.T) {
	t.Parallel()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	busy := &busyOnce{inner: http.DefaultTransport, release: make(chan struct{})}
	h := startThrough(t, busy, map[string]string{"test": strings.ToLower(rand.String(6))}, hostConfig(t, nil), reconcilers.WithResync(time.Hour))
	a := unique("team-a")
	h.profile(t, a, blobPlugin())
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "503")
	t.Logf("after the 503: %s", cond.Message)
	close(busy.release)
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	if !slices.Contains(containers(t), a) {
		t.Errorf("container %s missing after the retry", a)
	}
	if n := busy.creates.Load(); n != 2 {
		t.Errorf("%d container creations, want 2: the refused one and the next pass's", n)
	}
}

func TestInvalidSpecIsReportedAndDeletesNothing(t *testing.T) {
	t.Parallel()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	h := start(t, hostConfig(t, nil), reconcilers.WithResync(time.Hour))
	a, b := unique("team-a"), unique("team-b")
	h.profile(t, a, blobPlugin("standard"))
	h.profile(t, b, blobPlugin())
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany"})
	testhost.UpdateProfile(t, env.Client, a, func(p *kubeflowv1.Profile) { p.Spec.Plugins = []kubeflowv1.Plugin{blobPlugin("premium")} })
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, `instances[0]: "premium" is not an instance the host offers`)
	t.Logf("condition: %s", cond.Message)
	if got := liveClaims(t, a); !cmp.Equal(got, map[string]string{"standard": "ReadWriteMany"}) {
		t.Errorf("claims after an invalid spec = %v, want the standard claim kept", got)
	}
	// Another Profile is still served.
	waitClaims(t, b, map[string]string{"standard": "ReadWriteMany"})
	testhost.WaitCondition(t, env.Client, b, condType, plugins.ConditionTrue, "")
}
