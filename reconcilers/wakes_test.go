package reconcilers_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/reconcilers"
)

// applyCounts counts a plugin's Apply calls per Profile.
type applyCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *applyCounts) get(profile string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[profile]
}

// countingApplies returns a plugin of kind that writes nothing and counts its
// applies, with watches.
func countingApplies(kind string, watches ...plugins.Watch) (plugins.Definition, *applyCounts) {
	a := &applyCounts{n: map[string]int{}}
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: kind, ApplyFunc: func(_ context.Context, req plugins.Request) (plugins.Result, error) {
			a.mu.Lock()
			a.n[req.Profile.Name]++
			a.mu.Unlock()
			return plugins.Result{}, nil
		}},
		Watches: watches,
	}, a
}

// createProfile creates a Profile named name with labels and plugins,
// without its namespace, deleted when the test ends.
func createProfile(t *testing.T, name string, l map[string]string, ps ...kubeflowv1.Plugin) {
	t.Helper()
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: testhost.DefaultOwner}, Plugins: ps}}
	if err := env.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) }) //nolint:forbidigo // t.Context() is done when cleanups run
}

// selected lists only the objects that match sel.
type selected struct {
	client.Reader
	sel labels.Selector
}

func (s selected) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return s.Reader.List(ctx, list, append(opts, client.MatchingLabelsSelector{Selector: s.sel})...)
}

// createCoreNamespace makes the Profile's namespace as the core plugin
// does: with its ownership labels.
func createCoreNamespace(t *testing.T, profile string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: profile, Labels: plugins.OwnershipLabels(plugins.CoreKind, profile)}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) }) //nolint:forbidigo // t.Context() is done when cleanups run
	return ns
}

// A plugin that waits for the core plugin's namespace is passed once per
// Profile, when the namespace appears: the Profile's creation, before it,
// wakes it for nothing, and neither does a label written on the namespace
// afterwards. A plugin that does not apply to the Profile is passed for
// the Profile's creation alone, never for its namespace.
func TestNamespaceGateWakesOnceThePassCanWrite(t *testing.T) {
	run := rand.String(5)
	sel := labels.SelectorFromSet(labels.Set{"wakes-test": run})
	all := func(*kubeflowv1.Profile) bool { return true }
	gatedKind, idleKind := "gated"+run, "idle"+run
	gated, gatedApplies := countingApplies(gatedKind)
	idle, idleApplies := countingApplies(idleKind)
	first := reconcilers.NewFirstPass()
	// The shard keeps other tests' Profiles (some still being deleted)
	// from the counts.
	testhost.Start(t, env,
		testhost.Plugin{Def: gated, Options: []reconcilers.Option{reconcilers.WithEnabledForAll(sel), reconcilers.WithNamespaceGate(all),
			reconcilers.WithResync(time.Hour), reconcilers.WithFirstPass(first), reconcilers.WithShard(sel)}},
		testhost.Plugin{Def: idle, Options: []reconcilers.Option{reconcilers.WithNamespaceGate(all), reconcilers.WithResync(time.Hour), reconcilers.WithShard(sel)}},
	)
	a, c := "gate-a-"+run, "gate-c-"+run
	createProfile(t, a, map[string]string{"wakes-test": run})
	createProfile(t, c, map[string]string{"wakes-test": run})
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return testhost.Reconciles(t, idleKind) >= 2, "the plugin that does not apply has not decided on both Profiles"
	})
	// Each controller handles the Profiles' events in its own time: the
	// waiting plugin's events, which wake nothing, count as its passes.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := first.Wait(ctx, selected{env.Client, sel}); err != nil {
		t.Fatalf("the Profiles held at the namespace gate did not count as passed: %v", err)
	}

	ns := createCoreNamespace(t, a)
	testhost.WaitCondition(t, env.Client, a, plugins.ConditionTypeFor(gatedKind), plugins.ConditionTrue, "")
	// A label another plugin writes on the namespace opens nothing.
	ns.Labels["example.org/team"] = "blue"
	if err := env.Client.Update(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	// The namespace of c comes after that update in the same informer: once
	// its wake is counted, the update's would have been too.
	createCoreNamespace(t, c)
	testhost.WaitCondition(t, env.Client, c, plugins.ConditionTypeFor(gatedKind), plugins.ConditionTrue, "")

	if got := testhost.Wakes(t, gatedKind, "namespace"); got != 2 {
		t.Errorf("the waiting plugin was asked %v times by namespaces, want 2 (their creations)", got)
	}
	if got := testhost.Wakes(t, gatedKind, "profile"); got != 0 {
		t.Errorf("the waiting plugin was asked %v times by Profiles whose namespace was not there, want 0", got)
	}
	if got := testhost.Reconciles(t, gatedKind); got != 2 {
		t.Errorf("the waiting plugin was reconciled %v times for 2 Profiles, want 2", got)
	}
	if a, c := gatedApplies.get(a), gatedApplies.get(c); a != 1 || c != 1 {
		t.Errorf("the waiting plugin applied %d and %d times, want once each", a, c)
	}
	if got := testhost.Wakes(t, idleKind, "namespace"); got != 0 {
		t.Errorf("the plugin that does not apply was asked %v times by namespaces, want 0", got)
	}
	if got := testhost.Reconciles(t, idleKind); got != 2 {
		t.Errorf("the plugin that does not apply was reconciled %v times for 2 Profiles, want 2", got)
	}
	if n := idleApplies.get(a) + idleApplies.get(c); n != 0 {
		t.Errorf("the plugin that does not apply applied %d times", n)
	}
}

// A watched object wakes the Profiles the plugin serves, not those it does
// not apply to and left nothing on; and of its updates, only those the
// watch's Changed passes.
func TestWatchedKindWakesOnlyProfilesServed(t *testing.T) {
	run := rand.String(5)
	kind := "watcher" + run
	cm := apply.NewMetadata(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	def, _ := countingApplies(kind, plugins.Watch{
		Object:   cm,
		Profiles: func(_ context.Context, o client.Object) []string { return []string{o.GetNamespace()} },
		Changed: func(_ any, before, after client.Object) bool {
			return !maps.Equal(before.GetLabels(), after.GetLabels())
		},
	})
	def, fence := testhost.Fenced(def)
	testhost.Start(t, env, testhost.Plugin{Def: def, Options: []reconcilers.Option{reconcilers.WithResync(time.Hour)}})
	served, other := "served-"+run, "other-"+run
	testhost.NewProfile(t, env.Client, served, nil, entry(kind, ""))
	testhost.NewProfile(t, env.Client, other, nil)
	testhost.WaitCondition(t, env.Client, served, plugins.ConditionTypeFor(kind), plugins.ConditionTrue, "")
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return testhost.Reconciles(t, kind) >= 2, "the plugin has not decided on both Profiles"
	})
	before := testhost.Wakes(t, kind, "watched/ConfigMap")

	for _, ns := range []string{other, served} { // served last: the sentinel
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "input"}}
		if err := env.Client.Create(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return testhost.Wakes(t, kind, "watched/ConfigMap") > before, "the served Profile's ConfigMap woke nothing"
	})
	if got := testhost.Wakes(t, kind, "watched/ConfigMap") - before; got != 1 {
		t.Errorf("two ConfigMaps asked for %v passes, want 1: the other Profile's does not concern the plugin", got)
	}

	update := func(edit func(*corev1.ConfigMap)) {
		t.Helper()
		var c corev1.ConfigMap
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: served, Name: "input"}, &c); err != nil {
			t.Fatal(err)
		}
		edit(&c)
		if err := env.Client.Update(t.Context(), &c); err != nil {
			t.Fatal(err)
		}
	}
	fenced := func(name string) float64 {
		t.Helper()
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: name}}
		if err := env.Client.Create(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		fence.Wait(t, name)
		return testhost.Wakes(t, kind, "watched/ConfigMap") - before
	}
	update(func(c *corev1.ConfigMap) { c.Data = map[string]string{"unread": "1"} })
	if got := fenced("fence-1"); got != 1 {
		t.Errorf("an update Changed does not pass asked for %v passes, want 0", got-1)
	}
	update(func(c *corev1.ConfigMap) { c.Labels = map[string]string{"read": "1"} })
	if got := fenced("fence-2"); got != 2 {
		t.Errorf("an update Changed passes asked for %v passes, want 1", got-1)
	}
}
