package testhost

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// Fence tells a test when the host has handled every event of a watched
// kind up to one the test made last: the events of one informer reach a
// watch in the order they happened, so once the watch's map to Profiles
// has seen the fence object, the events before it have been handled, and
// the wakes they asked for (Wakes) are counted. A test that asserts that a
// change woke nothing makes the change, then a fence object, and counts
// once the fence is seen, without sleeping.
type Fence struct {
	mu   sync.Mutex
	seen map[string]bool
}

// Fenced returns def with each of its watches' Profiles recording the
// names of the objects it is asked to map, and the Fence that reads them.
// Creations always reach Profiles (Watch.Changed filters updates only).
func Fenced(def plugins.Definition) (plugins.Definition, *Fence) {
	f := &Fence{seen: map[string]bool{}}
	watches := make([]plugins.Watch, len(def.Watches))
	for i, w := range def.Watches {
		profiles := w.Profiles
		if profiles != nil {
			w.Profiles = func(ctx context.Context, o client.Object) []string {
				f.mu.Lock()
				f.seen[o.GetName()] = true
				f.mu.Unlock()
				return profiles(ctx, o)
			}
		}
		watches[i] = w
	}
	def.Watches = watches
	return def, f
}

// Wait waits until a watch was asked to map an object named name.
func (f *Fence) Wait(t *testing.T, name string) {
	t.Helper()
	Eventually(t, 20*time.Second, func() (bool, string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.seen[name], fmt.Sprintf("the watches have not seen %s", name)
	})
}
