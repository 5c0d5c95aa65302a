package reconcilers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

// A Runner that enqueues more Profiles than the host's queue holds just as
// the host stops (a grants change naming thousands of namespaces) must not
// hold the shutdown: the host stops within seconds, without an error, and
// leaves no goroutine of the Runner behind.
func TestRunnerEnqueueDuringShutdown(t *testing.T) {
	// The API server's client keeps connections and their goroutines for
	// the whole package; only what this test starts must end with it.
	leaks := goleak.IgnoreCurrent()
	var sent, returned atomic.Int32
	def := plugins.Definition{
		Plugin: plugins.Funcs{
			KindName:   "flood",
			ApplyFunc:  func(context.Context, plugins.Request) (plugins.Result, error) { return plugins.Result{}, nil },
			RevokeFunc: func(context.Context, plugins.Request) (plugins.Result, error) { return plugins.Result{}, nil },
		},
		Runner: func(ctx context.Context, rt plugins.Runtime) error {
			defer returned.Add(1)
			<-ctx.Done()
			names := make([]string, 5000)
			for i := range names {
				names[i] = fmt.Sprintf("tenant-%d", i)
			}
			rt.Enqueue(names...)
			rt.EnqueueAll()
			sent.Add(1)
			return nil
		},
	}
	mgr, err := ctrl.NewManager(env.Config, manager.Options{
		Scheme:                  env.Scheme,
		Cache:                   reconcilers.CacheOptions(nil),
		Client:                  reconcilers.ClientOptions(),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
		GracefulShutdownTimeout: ptr.To(20 * time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := reconcilers.New(mgr, def)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	time.Sleep(200 * time.Millisecond)

	cancel()
	start := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("manager stopped with %v", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("manager took %s to stop, want seconds", took.Round(time.Millisecond))
		}
	case <-time.After(25 * time.Second):
		t.Fatal("manager did not stop within 25s")
	}
	if sent.Load() != 1 || returned.Load() != 1 {
		t.Errorf("Runner: enqueue returned %d times, Runner returned %d times; want 1 and 1", sent.Load(), returned.Load())
	}
	// A metadata-only informer's watch.Filter goroutine can be left blocked
	// on a send when its reflector stops: a known leak of apimachinery's
	// watch.Filter (kubernetes/kubernetes#113254), not of the host.
	if err := goleak.Find(leaks, goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop")); err != nil {
		t.Errorf("goroutines left after the host stopped: %v", err)
	}
}
