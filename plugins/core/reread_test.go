package core_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestPassInSyncReadsNothingLive: a pass that changes nothing of the
// namespace judges it from the cache alone; only one that would change its
// labels or its owner annotation reads it from the API server first.
func TestPassInSyncReadsNothingLive(t *testing.T) {
	run := "reread-" + rand.String(4)
	counter := &testenv.Counter{}
	counted := *env
	counted.Config = counter.Counting(env.Config)
	sel := labels.SelectorFromSet(labels.Set{labelTest: run})
	testhost.Start(t, &counted, testhost.Plugin{Def: core.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(`{}`)),
		reconcilers.WithEnabledForAll(sel),
		reconcilers.WithShard(sel),
		reconcilers.WithResync(100 * time.Millisecond),
	}})
	name := "reread-" + rand.String(5)
	newProfile(t, name, run, "alice@example.org", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	before := testhost.Reconciles(t, core.Kind)
	counter.Reset()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		n := testhost.Reconciles(t, core.Kind) - before
		return n >= 5, fmt.Sprintf("%v passes since", n)
	})
	if whole, metadata := counter.Reads("/api/v1/namespaces/" + name); whole+metadata > 0 {
		t.Errorf("passes in sync read the namespace from the API server %d times (%d for metadata only), want 0", whole+metadata, metadata)
	}
}
