package upstream_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/kubeflow-fork/upstream"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// startFork runs the stand-in's controller in a manager of its own, as
// upstream's main does (cached client, no leader election), with the
// requests it sends counted, until the test ends.
func startFork(t *testing.T) *recorder {
	t.Helper()
	counter := &recorder{}
	mgr, err := upstream.NewManager(counter.recording(env.Config), ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &upstream.ProfileReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Log: testr.New(t)}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background()) //nolint:forbidigo // the manager serves the cleanups, which run after t.Context is canceled
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctrl.LoggerInto(ctx, testr.New(t))) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return counter
}

// recorder records the requests sent through a rest.Config as "VERB path".
type recorder struct {
	mu       sync.Mutex
	requests []string
}

func (c *recorder) recording(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			c.mu.Lock()
			c.requests = append(c.requests, r.Method+" "+r.URL.Path)
			c.mu.Unlock()
			return rt.RoundTrip(r)
		})
	})
	return out
}

// Reset forgets the requests recorded so far.
func (c *recorder) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = nil
}

// Count returns how many requests were exactly req ("VERB path").
func (c *recorder) Count(req string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.requests {
		if r == req {
			n++
		}
	}
	return n
}

// Matching returns the requests recorded whose path contains part.
func (c *recorder) Matching(part string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.requests {
		if strings.Contains(r, part) {
			out = append(out, r)
		}
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// entry is a spec.plugins entry.
func entry(kind, spec string) kubeflowv1.Plugin {
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: kind}, Spec: &runtime.RawExtension{Raw: []byte(spec)}}
}

// createProfile creates a Profile that lists entries.
func createProfile(t *testing.T, name string, entries ...kubeflowv1.Plugin) {
	t.Helper()
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubeflowv1.ProfileSpec{
			Owner:   rbacv1.Subject{Kind: "User", Name: name + "@example.org"},
			Plugins: entries,
		},
	}
	if err := env.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	// Gone before the fork's manager stops (cleanups run last first), so
	// that the next test's fork does not serve it.
	t.Cleanup(func() { deleteProfile(t, name) })
}

// deleteProfile deletes the Profile and waits until it is gone, also from
// a cleanup, when the test's context is done.
func deleteProfile(t *testing.T, name string) {
	ctx := context.WithoutCancel(t.Context())
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
		t.Errorf("delete Profile %s: %v", name, err)
		return
	}
	if err := poll(30*time.Second, func() error { return gone(ctx, &kubeflowv1.Profile{}, client.ObjectKey{Name: name}) }); err != nil {
		t.Errorf("Profile %s: %v", name, err)
	}
}

// eventually retries fn every 100 ms until it returns nil, and fails the test
// with fn's last error when within runs out.
func eventually(t *testing.T, within time.Duration, fn func() error) {
	t.Helper()
	if err := poll(within, fn); err != nil {
		t.Fatalf("after %s: %v", within, err)
	}
}

func poll(within time.Duration, fn func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// present fails unless an object of key exists.
func present(ctx context.Context, obj client.Object, key client.ObjectKey) error {
	return env.Client.Get(ctx, key, obj)
}

// gone returns nil once no object of key exists.
func gone(ctx context.Context, obj client.Object, key client.ObjectKey) error {
	err := env.Client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%T %s still exists (deletion %v, finalizers %v)", obj, key, obj.GetDeletionTimestamp(), obj.GetFinalizers())
}

// passes returns how many passes over the Profile the fork made since the
// recorder was reset: upstream updates the Profile once on every pass.
func passes(c *recorder, name string) int {
	return c.Count("PUT /apis/kubeflow.org/v1/profiles/" + name)
}

// settled waits until the fork has made no pass over the Profile for quiet.
func settled(t *testing.T, c *recorder, name string, quiet time.Duration) {
	t.Helper()
	eventually(t, 20*time.Second, func() error {
		before := passes(c, name)
		time.Sleep(quiet)
		if n := passes(c, name) - before; n > 0 {
			return fmt.Errorf("%d passes in %s", n, quiet)
		}
		return nil
	})
}

// condition returns the Profile's condition of type t, or nil.
func condition(ctx context.Context, name, t string) (*kubeflowv1.ProfileCondition, error) {
	var p kubeflowv1.Profile
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
		return nil, err
	}
	return plugins.FindCondition(p.Status.Conditions, t), nil
}

var (
	quotaKey = func(name string) client.ObjectKey { return client.ObjectKey{Namespace: name, Name: quotas.DefaultName} }
	limitKey = func(name string) client.ObjectKey {
		return client.ObjectKey{Namespace: name, Name: limitrange.DefaultName}
	}
)

const (
	quotaSpec = `{"hard":{"limits.cpu":"4"}}`
	limitSpec = `{"container":{"max":{"cpu":"2"}}}`
)

// TestForkRepairsDrift: an object of ours deleted by hand is put back within
// seconds, without waiting for an edit of the Profile.
func TestForkRepairsDrift(t *testing.T) {
	const name = "fork-drift"
	startFork(t)
	createProfile(t, name, entry(quotas.Kind, quotaSpec), entry(limitrange.Kind, limitSpec))
	var lr corev1.LimitRange
	eventually(t, 20*time.Second, func() error { return present(t.Context(), &lr, limitKey(name)) })
	old := lr.UID
	if err := env.Client.Delete(t.Context(), &lr); err != nil {
		t.Fatal(err)
	}
	err := poll(5*time.Second, func() error {
		var back corev1.LimitRange
		if err := present(t.Context(), &back, limitKey(name)); err != nil {
			return err
		}
		if back.UID == old {
			return fmt.Errorf("the deleted LimitRange is still there")
		}
		return nil
	})
	if err != nil {
		t.Errorf("hand-deleted LimitRange %s not back within 5 s: %v", limitKey(name), err)
	}
}

// TestForkResyncSendsNothing: a pass over a Profile with nothing changed
// sends no request for the plugins' objects: reads come from the cache.
func TestForkResyncSendsNothing(t *testing.T) {
	const name = "fork-resync"
	counter := startFork(t)
	createProfile(t, name, entry(quotas.Kind, quotaSpec), entry(limitrange.Kind, limitSpec))
	eventually(t, 20*time.Second, func() error { return present(t.Context(), &corev1.LimitRange{}, limitKey(name)) })
	settled(t, counter, name, 2*time.Second)

	counter.Reset()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, "example.org/touched", time.Now().Format(time.RFC3339Nano))
	})
	eventually(t, 10*time.Second, func() error {
		if passes(counter, name) == 0 {
			return fmt.Errorf("no pass after the Profile changed")
		}
		return nil
	})
	settled(t, counter, name, time.Second)
	ours := counter.Matching("/namespaces/" + name + "/")
	if len(ours) != 0 {
		t.Errorf("a pass with nothing changed sent %d requests for the plugins' objects, want 0:\n%s", len(ours), strings.Join(ours, "\n"))
	}
}

// TestForkBadSpecOnCondition: a spec the plugin refuses becomes a False
// condition on the Profile, the plugins after it still apply, the Profile
// gets upstream's finalizer, and there is no hot retry loop.
func TestForkBadSpecOnCondition(t *testing.T) {
	const name = "fork-badspec"
	counter := startFork(t)
	createProfile(t, name, entry(quotas.Kind, `{"hrad":{"limits.cpu":"4"}}`), entry(limitrange.Kind, limitSpec))
	cond := quotas.Definition().Condition()
	err := poll(15*time.Second, func() error {
		c, err := condition(t.Context(), name, cond)
		switch {
		case err != nil:
			return err
		case c == nil:
			return fmt.Errorf("no %s condition", cond)
		case c.Status != plugins.ConditionFalse || !strings.Contains(c.Message, `unknown field "hrad"`):
			return fmt.Errorf("%s = %+v, want False naming the unknown field", cond, *c)
		}
		return nil
	})
	if err != nil {
		t.Errorf("bad spec: %v", err)
	}
	if err := poll(5*time.Second, func() error { return present(t.Context(), &corev1.LimitRange{}, limitKey(name)) }); err != nil {
		t.Errorf("the plugin listed after the bad one was not applied: %v", err)
	}
	if err := poll(5*time.Second, func() error {
		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return err
		}
		if !controllerutil.ContainsFinalizer(&p, upstream.Finalizer) {
			return fmt.Errorf("finalizers %v", p.Finalizers)
		}
		return nil
	}); err != nil {
		t.Errorf("no %s on the Profile: %v", upstream.Finalizer, err)
	}
	before := passes(counter, name)
	time.Sleep(3 * time.Second)
	if n := passes(counter, name) - before; n > 1 {
		t.Errorf("%d passes in 3 s with the bad spec unchanged, want no retry loop", n)
	}
}

// TestForkWritesConditionsOnce: every plugin's condition reaches a new
// Profile, True, in one status write.
func TestForkWritesConditionsOnce(t *testing.T) {
	const name = "fork-status"
	counter := startFork(t)
	createProfile(t, name, entry(quotas.Kind, quotaSpec), entry(limitrange.Kind, limitSpec))
	for _, def := range []plugins.Definition{quotas.Definition(), limitrange.Definition()} {
		err := poll(15*time.Second, func() error {
			c, err := condition(t.Context(), name, def.Condition())
			switch {
			case err != nil:
				return err
			case c == nil || c.Status != plugins.ConditionTrue:
				return fmt.Errorf("%s = %+v, want True", def.Condition(), c)
			}
			return nil
		})
		if err != nil {
			t.Errorf("condition: %v", err)
		}
	}
	settled(t, counter, name, 2*time.Second)
	if w := counter.Matching("/profiles/" + name + "/status"); len(w) != 1 {
		t.Errorf("status requests %v, want one write", w)
	}
}
