package reconcilers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

// precedenceHost runs two plugins sharing a Precedence that lets a
// confirming pass wait at most wait: "holder", whose first pass over the
// Profile named held blocks until release is closed, and "confirmer",
// which records when it serves each Profile.
type precedenceHost struct {
	run, held string
	holding   chan struct{}
	release   chan struct{}

	mu     sync.Mutex
	passes map[string][]time.Time
}

func startPrecedenceHost(t *testing.T, wait time.Duration, confirmerOpts ...reconcilers.Option) *precedenceHost {
	t.Helper()
	run := "prec-" + rand.String(4)
	h := &precedenceHost{run: run, held: run + "-new", holding: make(chan struct{}), release: make(chan struct{}), passes: map[string][]time.Time{}}
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	var once sync.Once
	holder := plugins.Funcs{KindName: "holder", ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
		if req.Profile.Name == h.held {
			once.Do(func() { close(h.holding) })
			select {
			case <-h.release:
			case <-ctx.Done():
			}
		}
		return plugins.Result{}, nil
	}}
	confirmer := plugins.Funcs{KindName: "confirmer", ApplyFunc: func(_ context.Context, req plugins.Request) (plugins.Result, error) {
		h.mu.Lock()
		h.passes[req.Profile.Name] = append(h.passes[req.Profile.Name], time.Now())
		h.mu.Unlock()
		return plugins.Result{}, nil
	}}
	prec := reconcilers.NewPrecedence(wait)
	opts := []reconcilers.Option{
		reconcilers.WithEnabledForAll(labels.SelectorFromSet(labels.Set{"run": run})),
		reconcilers.WithPrecedence(prec),
	}
	testhost.Start(t, env,
		testhost.Plugin{Def: plugins.Definition{Plugin: holder}, Options: opts},
		testhost.Plugin{Def: plugins.Definition{Plugin: confirmer}, Options: append(opts, confirmerOpts...)},
	)
	return h
}

// served returns the times the confirmer served the Profile named name.
func (h *precedenceHost) served(name string) []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.passes[name]...)
}

// converge creates the Profile named name and waits until both plugins
// report it ready.
func (h *precedenceHost) converge(t *testing.T, name string) {
	t.Helper()
	testhost.NewProfile(t, env.Client, name, map[string]string{"run": h.run})
	for _, kind := range []string{"holder", "confirmer"} {
		testhost.WaitCondition(t, env.Client, name, plugins.Definition{Plugin: plugins.Funcs{KindName: kind}}.Condition(), plugins.ConditionTrue, "")
	}
}

// touch changes a label of the Profile named name, which brings a pass of
// every plugin that only confirms: the spec and the conditions stay.
func touch(t *testing.T, name string) time.Time {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Labels["touched"] = rand.String(4) })
	return time.Now()
}

// confirmationWaiting converges a Profile, holds a new one's first pass
// (the new Profile's other plugin is served meanwhile), touches the first
// Profile and checks for settle that its confirmation waits. It returns the
// first Profile's name and how often the confirmer had served it before.
func (h *precedenceHost) confirmationWaiting(t *testing.T, settle time.Duration) (string, int) {
	t.Helper()
	synced := h.run + "-synced"
	h.converge(t, synced)
	before := len(h.served(synced))
	testhost.NewProfile(t, env.Client, h.held, map[string]string{"run": h.run})
	<-h.holding
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return len(h.served(h.held)) > 0, "the confirmer has not served the new Profile"
	})
	touch(t, synced)
	time.Sleep(settle)
	if n := len(h.served(synced)); n != before {
		t.Fatalf("the confirmer served the Profile in sync %d more times while an urgent pass was under way", n-before)
	}
	return synced, before
}

// TestConfirmingPassesWaitForUrgentOnes: while the first pass of a new
// Profile is under way, the pass of a Profile already in sync waits for it,
// also in another plugin; the new Profile's passes do not wait; once the
// urgent pass ends, the confirming one runs at once.
func TestConfirmingPassesWaitForUrgentOnes(t *testing.T) {
	h := startPrecedenceHost(t, time.Minute)
	synced, before := h.confirmationWaiting(t, 1500*time.Millisecond)
	released := time.Now()
	close(h.release)
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return len(h.served(synced)) > before, "the confirming pass did not run after the urgent one ended"
	})
	if d := h.served(synced)[before].Sub(released); d > 2*time.Second {
		t.Errorf("the confirming pass ran %s after the urgent one ended", d)
	}
}

// TestConfirmingPassesWaitAtMostTheBound: an urgent pass that never ends
// (an outside system that does not answer) holds a confirming pass for the
// bound only.
func TestConfirmingPassesWaitAtMostTheBound(t *testing.T) {
	const bound = 300 * time.Millisecond
	h := startPrecedenceHost(t, bound)
	synced := h.run + "-synced"
	h.converge(t, synced)
	before := len(h.served(synced))

	testhost.NewProfile(t, env.Client, h.held, map[string]string{"run": h.run})
	<-h.holding
	touched := touch(t, synced)
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return len(h.served(synced)) > before, "the confirming pass did not run while the urgent one was held"
	})
	if d := h.served(synced)[before].Sub(touched); d < bound-50*time.Millisecond {
		t.Errorf("the confirming pass ran %s after the change, before its bound of %s", d, bound)
	}
	select {
	case <-h.release:
		t.Fatal("the urgent pass ended before the confirming one ran")
	default:
	}
}

// TestNewWorkEndsAWait: a confirming pass that waits holds its worker; a
// Profile created while every worker of the plugin waits ends one wait, and
// its pass takes that worker, instead of waiting for the bound. The woken
// confirmation does not run then: it comes back for the rest of its wait,
// and runs as soon as the urgent pass ends.
func TestNewWorkEndsAWait(t *testing.T) {
	h := startPrecedenceHost(t, time.Minute, reconcilers.WithConcurrency(1))
	// The confirmer's only worker now waits with the Profile in sync.
	synced, before := h.confirmationWaiting(t, 500*time.Millisecond)

	fresh := h.run + "-fresh"
	created := time.Now()
	testhost.NewProfile(t, env.Client, fresh, map[string]string{"run": h.run})
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return len(h.served(fresh)) > 0, "the confirmer has not served the Profile created while its worker waited"
	})
	if d := h.served(fresh)[0].Sub(created); d > 5*time.Second {
		t.Errorf("the new Profile was served %s after it was created", d)
	}
	if n := len(h.served(synced)); n != before {
		t.Errorf("the woken confirmation ran %d times while the urgent pass was still under way, want 0", n-before)
	}
	// The woken confirmation comes back as soon as the urgent pass ends,
	// not only when its bound (a minute here) is over.
	released := time.Now()
	close(h.release)
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return len(h.served(synced)) > before, "the woken confirmation did not run after the urgent pass ended"
	})
	if d := h.served(synced)[before].Sub(released); d > 2*time.Second {
		t.Errorf("the woken confirmation ran %s after the urgent pass ended", d)
	}
}
