package reconcilers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

// counting is a plugin with outside state (so a finalizer) that counts its
// passes per Profile.
type counting struct {
	mu              sync.Mutex
	applies, revoke map[string]int
}

func (c *counting) definition(kind string) plugins.Definition {
	c.applies, c.revoke = map[string]int{}, map[string]int{}
	count := func(m map[string]int, name string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		m[name]++
	}
	return plugins.Definition{OutsideState: true, Plugin: plugins.Funcs{KindName: kind,
		ApplyFunc: func(_ context.Context, req plugins.Request) (plugins.Result, error) {
			count(c.applies, req.Profile.Name)
			return plugins.Result{}, nil
		},
		RevokeFunc: func(_ context.Context, req plugins.Request) (plugins.Result, error) {
			count(c.revoke, req.Profile.Name)
			return plugins.Result{}, nil
		},
	}}
}

func (c *counting) passes(name string) (applies, revokes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.applies[name], c.revoke[name]
}

// A Profile annotated profilekit.dev/paused gets no pass of a paused
// plugin, and its condition says Paused; a list of other kinds does not
// pause it; the annotation's removal resumes it; and revocation is never
// paused: a paused Profile that no longer enables the plugin, or that is
// deleted, is revoked, so that nothing outlives it.
func TestPausedAnnotation(t *testing.T) {
	run := "pause-" + rand.String(5)
	kind := "Pausable"
	c := &counting{}
	shard := labels.SelectorFromSet(labels.Set{"run": run})
	on := labels.SelectorFromSet(labels.Set{"on": "yes"})
	testhost.Start(t, env, testhost.Plugin{Def: c.definition(kind), Options: []reconcilers.Option{
		reconcilers.WithShard(shard), reconcilers.WithEnabledForAll(on), reconcilers.WithResync(300 * time.Millisecond)}})
	condType := kind + "Ready"
	paused := func(name, value string) *kubeflowv1.Profile {
		p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"run": run, "on": "yes"},
			Annotations: map[string]string{plugins.AnnotationPaused: value}}}
		if err := env.Client.Create(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) }) //nolint:forbidigo // cleanups run after t.Context is canceled
		return p
	}

	all, others := run+"-all", run+"-others"
	paused(all, "true")
	paused(others, "Quotas, Network")
	testhost.WaitCondition(t, env.Client, others, condType, plugins.ConditionTrue, "")
	cond := testhost.WaitCondition(t, env.Client, all, condType, plugins.ConditionUnknown, plugins.ReasonPaused)
	t.Logf("condition: %s", cond.Message)
	time.Sleep(time.Second) // resyncs meanwhile
	if applies, _ := c.passes(all); applies != 0 {
		t.Errorf("a paused plugin applied %d times", applies)
	}

	testhost.UpdateProfile(t, env.Client, all, func(p *kubeflowv1.Profile) { p.Annotations = map[string]string{plugins.AnnotationPaused: "pausable"} })
	time.Sleep(time.Second)
	if applies, _ := c.passes(all); applies != 0 {
		t.Errorf("a plugin paused by its kind applied %d times", applies)
	}
	testhost.UpdateProfile(t, env.Client, all, func(p *kubeflowv1.Profile) { p.Annotations = nil })
	testhost.WaitCondition(t, env.Client, all, condType, plugins.ConditionTrue, "")

	// Revocation is never paused: a paused Profile that no longer enables
	// the plugin is revoked.
	testhost.UpdateProfile(t, env.Client, others, func(p *kubeflowv1.Profile) {
		p.Annotations = map[string]string{plugins.AnnotationPaused: "true"}
	})
	testhost.WaitCondition(t, env.Client, others, condType, plugins.ConditionUnknown, plugins.ReasonPaused)
	testhost.UpdateProfile(t, env.Client, others, func(p *kubeflowv1.Profile) { delete(p.Labels, "on") })
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		_, revokes := c.passes(others)
		return revokes > 0, "a paused Profile that no longer enables the plugin was not revoked"
	})

	testhost.UpdateProfile(t, env.Client, all, func(p *kubeflowv1.Profile) { p.Annotations = map[string]string{plugins.AnnotationPaused: "true"} })
	testhost.WaitCondition(t, env.Client, all, condType, plugins.ConditionUnknown, plugins.ReasonPaused)
	if err := env.Client.Delete(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: all}}); err != nil {
		t.Fatal(err)
	}
	testhost.WaitProfileGone(t, env.Client, all, 20*time.Second)
	if _, revokes := c.passes(all); revokes == 0 {
		t.Error("a paused Profile was deleted without its revoke")
	}
}

// A terminal error is handed to controller-runtime as its TerminalError:
// its controller counts it, and does not retry it with backoff.
func TestTerminalErrorsAreCountedByControllerRuntime(t *testing.T) {
	run := "terminal-" + rand.String(5)
	kind := "Terminal"
	sel := labels.SelectorFromSet(labels.Set{"run": run})
	def := plugins.Definition{Plugin: plugins.Funcs{KindName: kind, ApplyFunc: func(context.Context, plugins.Request) (plugins.Result, error) {
		return plugins.Result{}, plugins.Terminalf(plugins.ReasonInvalidSpec, "never valid")
	}}}
	testhost.Start(t, env, testhost.Plugin{Def: def, Options: []reconcilers.Option{reconcilers.WithShard(sel), reconcilers.WithEnabledForAll(sel)}})
	before := testhost.TerminalErrors(t, kind)
	name := run + "-a"
	testhost.NewProfile(t, env.Client, name, map[string]string{"run": run})
	testhost.WaitCondition(t, env.Client, name, kind+"Ready", plugins.ConditionFalse, plugins.ReasonInvalidSpec)
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return testhost.TerminalErrors(t, kind) > before, "controller_runtime_terminal_reconcile_errors_total did not count the terminal error"
	})
	time.Sleep(time.Second) // the condition's own write settles
	reconciles := testhost.Reconciles(t, kind)
	time.Sleep(2 * time.Second)
	if got := testhost.Reconciles(t, kind); got != reconciles {
		t.Errorf("the terminal error was retried: %v reconciles, then %v", reconciles, got)
	}
}
