package reconcilers_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

// With nothing changed, every Profile is reconciled once per resync period.
func TestResyncReconcilesEachProfileOncePerPeriod(t *testing.T) {
	const period = time.Second
	var mu sync.Mutex
	applies := map[string]int{}
	counts := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(applies)
	}
	def := plugins.Definition{Plugin: plugins.Funcs{KindName: "ticker", ApplyFunc: func(_ context.Context, req plugins.Request) (plugins.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		applies[req.Profile.Name]++
		return plugins.Result{}, nil
	}}}
	testhost.Start(t, env, testhost.Plugin{Def: def, Options: []reconcilers.Option{reconcilers.WithResync(period)}})
	suffix := rand.String(5)
	names := make([]string, 6)
	for i := range names {
		names[i] = fmt.Sprintf("tick-%d-%s", i, suffix)
		testhost.NewProfile(t, env.Client, names[i], nil, entry("ticker", ""))
	}
	for _, n := range names {
		testhost.WaitCondition(t, env.Client, n, "TickerReady", plugins.ConditionTrue, "")
	}

	const periods = 5
	before := counts()
	time.Sleep(periods * period)
	after := counts()
	for _, n := range names {
		// A pass at either edge of the window may fall in or out of it.
		if got := after[n] - before[n]; got < periods-1 || got > periods+1 {
			t.Errorf("%s: %d reconciles in %d periods, want %d +/- 1", n, got, periods, periods)
		}
	}
}
