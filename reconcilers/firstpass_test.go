package reconcilers_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

// shardReader lists only the Profiles of one test's run.
type shardReader struct {
	client.Reader
	run string
}

func (r shardReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.Reader.List(ctx, list, append(opts, client.MatchingLabels{"run": r.run})...)
}

// FirstPass.Wait returns once a pass of every Profile that existed when it
// began has ended, and not before: a pass held open holds it.
func TestFirstPassWaitsForEveryProfile(t *testing.T) {
	run := "first-" + rand.String(5)
	held := run + "-held"
	release, holding := make(chan struct{}), make(chan struct{})
	plugin := plugins.Funcs{KindName: "first", ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
		if req.Profile.Name == held {
			select {
			case holding <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return plugins.Result{}, nil
	}}
	for _, name := range []string{run + "-a", run + "-b", held} {
		testhost.NewProfile(t, env.Client, name, map[string]string{"run": run})
	}
	first := reconcilers.NewFirstPass()
	sel := labels.SelectorFromSet(labels.Set{"run": run})
	testhost.Start(t, env, testhost.Plugin{Def: plugins.Definition{Plugin: plugin}, Options: []reconcilers.Option{
		reconcilers.WithShard(sel), reconcilers.WithEnabledForAll(sel), reconcilers.WithFirstPass(first)}})

	done := make(chan error, 1)
	go func() { done <- first.Wait(t.Context(), shardReader{env.Client, run}) }()
	select {
	case <-holding:
	case <-time.After(20 * time.Second):
		t.Fatal("the held Profile's pass did not begin")
	}
	select {
	case err := <-done:
		t.Fatalf("Wait returned while a Profile's first pass was held open: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Wait did not return after every first pass ended")
	}
}
