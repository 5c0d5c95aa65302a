package core_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/reconcilers"
)

// editNamespace changes the namespace named name as a person would.
func editNamespace(t *testing.T, name string, edit func(*corev1.Namespace)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ns corev1.Namespace
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &ns); err != nil {
			return err
		}
		edit(&ns)
		return env.Client.Update(t.Context(), &ns)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fenceNamespace makes a namespace of no Profile, which the watch maps to
// nothing, and waits until the watch has seen it.
func fenceNamespace(t *testing.T, fence *testhost.Fence, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), ns) })
	fence.Wait(t, name)
}

// The watch on namespaces wakes the plugin for a namespace someone else
// holds, and only when what mayWrite reads of it changed (its owner
// annotation, say), not for a finalizer; the namespace the plugin makes
// itself wakes it through its own objects' watch, which drops the events
// of its writes, never through this one.
func TestNamespaceWatchWakesOnlyForWhatMayWriteReads(t *testing.T) {
	run := "wake-" + rand.String(4)
	def, fence := testhost.Fenced(core.Definition())
	sel := labels.SelectorFromSet(labels.Set{labelTest: run})
	// The shard keeps other tests' Profiles (some still being deleted)
	// from the counts.
	testhost.Start(t, env, testhost.Plugin{Def: def, Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(`{}`)),
		reconcilers.WithEnabledForAll(sel),
		reconcilers.WithShard(sel),
		reconcilers.WithResync(time.Hour),
	}})
	wakes := func() float64 { return testhost.Wakes(t, core.Kind, "watched/Namespace") }

	held := "wake-" + rand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: held}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), ns) })
	newProfile(t, held, run, "alice@example.org", nil)
	testhost.WaitCondition(t, env.Client, held, condType, plugins.ConditionFalse, "has no "+core.AnnotationOwner)
	editNamespace(t, held, func(ns *corev1.Namespace) {
		ns.Annotations = map[string]string{core.AnnotationOwner: "bob@example.org"}
	})
	testhost.WaitCondition(t, env.Client, held, condType, plugins.ConditionFalse, `belongs to "bob@example.org"`)
	fenceNamespace(t, fence, "fence-1-"+run)
	before := wakes()

	made := "wake-" + rand.String(5)
	newProfile(t, made, run, "alice@example.org", nil)
	testhost.WaitCondition(t, env.Client, made, condType, plugins.ConditionTrue, "")
	editNamespace(t, held, func(ns *corev1.Namespace) { ns.Finalizers = append(ns.Finalizers, "example.org/hold") })
	editNamespace(t, held, func(ns *corev1.Namespace) { ns.Finalizers = nil })
	fenceNamespace(t, fence, "fence-2-"+run)
	if got := wakes() - before; got != 0 {
		t.Errorf("the plugin's own namespace and a finalizer on another's woke it %v times through the watch, want 0", got)
	}

	editNamespace(t, held, func(ns *corev1.Namespace) { ns.Annotations[core.AnnotationOwner] = "alice@example.org" })
	testhost.WaitCondition(t, env.Client, held, condType, plugins.ConditionFalse, "profilekit did not make it")
	fenceNamespace(t, fence, "fence-3-"+run)
	if got := wakes() - before; got != 1 {
		t.Errorf("a new owner annotation on the namespace another holds woke the plugin %v times, want 1", got)
	}
}
