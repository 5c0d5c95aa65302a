package namespacemeta_test

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/namespacemeta"
	"github.com/profilekit/profilekit/reconcilers"
)

// createNamespace makes a namespace named name with annotations, deleted
// when the test ends.
func createNamespace(t *testing.T, name string, annotations map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), ns) })
}

// Under a host, an update of the Profile's namespace wakes the plugin only
// when it changes what the plugin reads: a key the host allows, or what it
// guards by. A key outside the host's allowlist and a finalizer wake
// nothing; a hand edit of one of its keys wakes it, and so does its own
// write that puts the key back (the events of a watched kind's writes are
// not told apart), whose pass then finds nothing to do.
func TestNamespaceUpdatesWakeOnlyForWhatThePluginReads(t *testing.T) {
	run := rand.String(5)
	name := "wake-" + run
	shard := map[string]string{"wakes-test": run}
	def, fence := testhost.Fenced(namespacemeta.Definition())
	// The shard keeps other tests' Profiles from the counts.
	testhost.Start(t, env, testhost.Plugin{Def: def, Options: []reconcilers.Option{
		reconcilers.WithDefaults(hostDefaults(t)),
		reconcilers.WithResync(time.Hour),
		reconcilers.WithShard(labels.SelectorFromSet(shard)),
	}})
	createNamespace(t, name, map[string]string{core.AnnotationOwner: owner})
	newProfile(t, name, spec(t, map[string]string{"istio.io/rev": "canary"}, nil))
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Labels = shard })
	want := map[string]string{corev1.LabelMetadataName: name, "istio.io/rev": "canary"}
	waitLabels(t, name, want)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	createNamespace(t, "fence-1-"+run, nil)
	fence.Wait(t, "fence-1-"+run)
	wakes := func() float64 { return testhost.Wakes(t, namespacemeta.Kind, "watched/Namespace") }
	before := wakes()

	editNamespace(t, name, func(ns *corev1.Namespace) { ns.Labels["team"] = "blue" })
	editNamespace(t, name, func(ns *corev1.Namespace) { ns.Finalizers = append(ns.Finalizers, "example.org/hold") })
	editNamespace(t, name, func(ns *corev1.Namespace) { ns.Finalizers = nil })
	createNamespace(t, "fence-2-"+run, nil)
	fence.Wait(t, "fence-2-"+run)
	if got := wakes() - before; got != 0 {
		t.Errorf("a label the host does not allow and a finalizer woke the plugin %v times, want 0", got)
	}

	editNamespace(t, name, func(ns *corev1.Namespace) { ns.Labels["istio.io/rev"] = "stable" })
	waitLabels(t, name, with(want, "team", "blue"))
	createNamespace(t, "fence-3-"+run, nil)
	fence.Wait(t, "fence-3-"+run)
	if got := wakes() - before; got != 2 {
		t.Errorf("a hand edit of the plugin's key and its repair woke the plugin %v times, want 2", got)
	}
}

// TestChangedReadsAllowedKeysAndGuards: which updates of a namespace the
// watch passes, under the doc's allowlist.
func TestChangedReadsAllowedKeysAndGuards(t *testing.T) {
	changed := namespacemeta.Definition().Watches[0].Changed
	cfg := &namespacemeta.Config{Allow: hostAllow}
	base := func() *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name:        "ns",
			Labels:      map[string]string{"team": "blue", "istio.io/rev": "canary"},
			Annotations: map[string]string{core.AnnotationOwner: owner, "note": "x"},
		}}
	}
	now := metav1.Now()
	cases := []struct {
		reason string
		edit   func(*metav1.PartialObjectMetadata)
		want   bool
	}{
		{"nothing the plugin reads: a key the host does not allow", func(m *metav1.PartialObjectMetadata) { m.Labels["team"] = "red" }, false},
		{"nothing the plugin reads: an annotation the host does not allow goes", func(m *metav1.PartialObjectMetadata) { delete(m.Annotations, "note") }, false},
		{"nothing the plugin reads: a finalizer", func(m *metav1.PartialObjectMetadata) { m.Finalizers = []string{"example.org/hold"} }, false},
		{"an allowed key changed", func(m *metav1.PartialObjectMetadata) { m.Labels["istio.io/rev"] = "stable" }, true},
		{"an allowed key went", func(m *metav1.PartialObjectMetadata) { delete(m.Labels, "istio.io/rev") }, true},
		{"a key of an allowed prefix came", func(m *metav1.PartialObjectMetadata) { m.Labels["example.org/cost"] = "1" }, true},
		{"an allowed annotation came", func(m *metav1.PartialObjectMetadata) {
			m.Annotations["scheduler.alpha.kubernetes.io/node-selector"] = "pool=a"
		}, true},
		{"the owner annotation, which mayMark guards by", func(m *metav1.PartialObjectMetadata) { m.Annotations[core.AnnotationOwner] = "eve@example.org" }, true},
		{"profilekit's ownership labels, which mayMark guards by", func(m *metav1.PartialObjectMetadata) {
			maps.Copy(m.Labels, plugins.OwnershipLabels(core.Kind, "ns"))
		}, true},
		{"the deletion", func(m *metav1.PartialObjectMetadata) { m.DeletionTimestamp = &now }, true},
	}
	for _, c := range cases {
		old, updated := base(), base()
		c.edit(updated)
		if got := changed(cfg, old, updated); got != c.want {
			t.Errorf("%s: Changed = %v, want %v", c.reason, got, c.want)
		}
	}
	if !changed(nil, base(), base()) {
		t.Error("without the host's config every update should pass")
	}
}
