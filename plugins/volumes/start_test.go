package volumes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/volumes"
)

// start runs s.Start in the background and returns a function that waits
// for it to return, at most a minute.
func start(ctx context.Context, s interface{ Start(context.Context) error }) func(t *testing.T) error {
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	return func(t *testing.T) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			t.Fatal("Start did not return within a minute")
			return nil
		}
	}
}

// TestSweeperStart: a host runs the sweeper as a Runnable. It does nothing
// without a retention, waits for the first pass before its first sweep,
// sweeps at once after it, and ends quietly when the host stops; a wait
// that fails while the host runs ends it with the error.
func TestSweeperStart(t *testing.T) {
	t.Run("without a retention it never waits nor sweeps", func(t *testing.T) {
		// A sweeper that went on would run until the host stopped.
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		s := sweeper(volumes.NewConfig())
		waited := 0
		s.Wait = func(context.Context) error { waited++; return nil }
		if err := start(ctx, s)(t); err != nil || waited != 0 {
			t.Errorf("Start without retainFor = %v after %d waits; want nil at once, no wait", err, waited)
		}
	})

	t.Run("a wait that fails while the host runs ends it", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		s := sweeper(sweepConfig(rand.String(5)))
		s.Wait = func(context.Context) error { return errors.New("first pass: cache not synced") }
		err := start(ctx, s)(t)
		if err == nil || !strings.Contains(err.Error(), "wait for the first pass: first pass: cache not synced") {
			t.Errorf("Start with a failed wait = %v; want the wait's error", err)
		}
	})

	t.Run("a host that stops while it waits ends it quietly", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		s := sweeper(sweepConfig(rand.String(5)))
		s.Wait = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
		wait := start(ctx, s)
		cancel()
		if err := wait(t); err != nil {
			t.Errorf("Start stopped while waiting = %v; want nil", err)
		}
	})

	t.Run("after the wait it sweeps at once, and stops with the host", func(t *testing.T) {
		var mu sync.Mutex
		var logged []string
		logger := funcr.New(func(prefix, args string) { mu.Lock(); defer mu.Unlock(); logged = append(logged, args) }, funcr.Options{})
		ctx, cancel := context.WithCancel(log.IntoContext(t.Context(), logger))
		defer cancel()
		id := rand.String(5)
		name := "start-" + id
		releasedVolume(t, name, time.Now().Add(-72*time.Hour), false)
		cfg := sweepConfig(id)
		cfg.SweepInterval = metav1.Duration{Duration: time.Hour}
		s := sweeper(cfg)
		waited := 0
		s.Wait = func(context.Context) error { waited++; return nil }
		wait := start(ctx, s)
		testhost.Eventually(t, 30*time.Second, func() (bool, string) {
			err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.PersistentVolume{})
			return apierrors.IsNotFound(err), fmt.Sprintf("expired volume %s still there: %v", name, err)
		})
		cancel()
		if err := wait(t); err != nil || waited != 1 {
			t.Errorf("Start = %v after %d waits; want nil after one", err, waited)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, l := range logged {
			if strings.Contains(l, "sweep released volumes") {
				t.Errorf("a sweep that did its work logged a failure: %s", l)
			}
		}
	})
}
