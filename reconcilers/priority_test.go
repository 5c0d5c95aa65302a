package reconcilers_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestNewestProfileIsServedBeforeABacklog: with one worker and a backlog of
// Profiles that each take a while, a Profile created later is served as soon
// as the worker is free, not after the backlog; the backlog is still served
// in full.
func TestNewestProfileIsServedBeforeABacklog(t *testing.T) {
	const backlog = 20
	run := "order-" + rand.String(4)
	var mu sync.Mutex
	var served []string
	seen := map[string]bool{}
	testhost.Start(t, env, testhost.Plugin{
		Def: plugins.Definition{Plugin: plugins.Funcs{KindName: "ordered", ApplyFunc: func(_ context.Context, req plugins.Request) (plugins.Result, error) {
			mu.Lock()
			if !seen[req.Profile.Name] {
				seen[req.Profile.Name] = true
				served = append(served, req.Profile.Name)
			}
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			return plugins.Result{}, nil
		}}},
		Options: []reconcilers.Option{
			reconcilers.WithEnabledForAll(labels.SelectorFromSet(labels.Set{"run": run})),
			reconcilers.WithConcurrency(1),
		},
	})
	var names []string
	for i := range backlog {
		name := fmt.Sprintf("%s-%02d", run, i)
		testhost.NewProfile(t, env.Client, name, map[string]string{"run": run})
		names = append(names, name)
	}
	// Creation times count in seconds: the newcomer is a second younger.
	time.Sleep(1100 * time.Millisecond)
	newcomer := run + "-new"
	testhost.NewProfile(t, env.Client, newcomer, map[string]string{"run": run})
	testhost.WaitCondition(t, env.Client, newcomer, "OrderedReady", plugins.ConditionTrue, "")
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(served) == backlog+1, fmt.Sprintf("%d of %d Profiles served", len(served), backlog+1)
	})

	mu.Lock()
	defer mu.Unlock()
	at := slices.Index(served, newcomer)
	after := len(served) - 1 - at
	t.Logf("served in order %v: the newcomer %d-th, %d of the backlog after it", served, at+1, after)
	if after < 3 {
		t.Errorf("the newcomer was served after %d of %d backlog Profiles (%d after it), want it ahead of the backlog left when it came", at, backlog, after)
	}
	for _, n := range names {
		if !seen[n] {
			t.Errorf("backlog Profile %s never served", n)
		}
	}
}
