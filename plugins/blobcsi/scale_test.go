package blobcsi_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestScale converges PROFILEKIT_SCALE_PROFILES Profiles (20 by default;
// make bench-storage runs 1,000) with three instances each and a grant set
// of 50 shared buckets, and reports the convergence time, the Azure requests
// per Profile at convergence and at steady state, and how many Profiles OPA
// polls with no change enqueue.
func TestScale(t *testing.T) {
	t.Parallel()
	n := 20
	if s := os.Getenv("PROFILEKIT_SCALE_PROFILES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("PROFILEKIT_SCALE_PROFILES=%q: want a positive number", s)
		}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%s-%04d", unique("p")[2:], i)
	}
	// 50 buckets; bucket i is read by 4 Profiles and written by 1, spread
	// over all Profiles.
	doc := grantsDoc{Classifications: []string{"unclassified"}, Teams: map[string][]string{}, Buckets: map[string]map[string]any{}}
	for i := range 50 {
		r, w := fmt.Sprintf("r%02d", i), fmt.Sprintf("w%02d", i)
		for j := range 4 {
			doc.Teams[r] = append(doc.Teams[r], names[(i*5+j)%n])
		}
		doc.Teams[w] = []string{names[(i*5+4)%n]}
		doc.Buckets[fmt.Sprintf("bucket-%02d", i)] = map[string]any{"classification": "unclassified", "readers": []string{r}, "writers": []string{w}, "spn": "sp"}
	}
	putGrants(t, doc)
	source := serversOf(t).source
	h := start(t, hostConfig(t, nil), reconcilers.WithResync(5*time.Second), reconcilers.WithConcurrency(8))
	h.azure.take()
	begin := time.Now()
	for _, name := range names {
		h.profile(t, name, blobPlugin("standard", "standard-ro", "protected-b"))
	}
	testhost.Eventually(t, 30*time.Minute, func() (bool, string) {
		var l kubeflowv1.ProfileList
		if err := env.Client.List(t.Context(), &l, client.MatchingLabels(h.shard)); err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, p := range l.Items {
			if c := plugins.FindCondition(p.Status.Conditions, condType); c != nil && c.Status == plugins.ConditionTrue {
				ready++
			}
		}
		return ready == n, fmt.Sprintf("%d of %d Profiles ready", ready, n)
	})
	converged := time.Since(begin)
	atConvergence := len(h.azure.take())

	// Steady state: resyncs with nothing changed, and OPA polls with no change.
	notifiedBefore := notified(t, source)
	pollsBefore := refreshes(t, source, "OK")
	writes := h.host.ResyncWrites(t, n, blobcsi.Kind)
	time.Sleep(3 * pollEvery)
	polls := refreshes(t, source, "OK") - pollsBefore
	steady := len(h.azure.take())
	enqueued := notified(t, source) - notifiedBefore
	if len(writes) != 0 || steady != 0 || enqueued != 0 {
		t.Errorf("steady state: mutating requests %v, %d Azure requests, %v Profiles enqueued by polls; want none", writes, steady, enqueued)
		for _, e := range testhost.Events(t, env.Client, names...) {
			t.Log(e)
		}
	}
	t.Logf("%d Profiles, 3 instances, 50 shared buckets: converged in %s; Azure requests per Profile at convergence %.2f, at steady state %d; %v OPA polls with no change enqueued %v Profiles; resync mutating requests %d",
		n, converged.Round(time.Millisecond), float64(atConvergence)/float64(n), steady, polls, enqueued, len(writes))
}

// notified reads profilekit_grants_notified_namespaces_total for a source.
func notified(t *testing.T, source string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "profilekit_grants_notified_namespaces_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == source {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
