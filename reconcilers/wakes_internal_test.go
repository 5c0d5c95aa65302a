package reconcilers

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A pass counts under the first trigger that asked for it since the last
// pass began; a pass nothing asked for is a requeue; every ask counts as a
// wake, however many one pass serves.
func TestWakesCountPassesByTheirFirstTrigger(t *testing.T) {
	kind := "wakes-test"
	w := newWakes(kind)
	reconciles := func(trigger string) float64 {
		return testutil.ToFloat64(reconcilesTotal.WithLabelValues(kind, trigger))
	}
	asks := func(trigger string) float64 { return testutil.ToFloat64(wakesTotal.WithLabelValues(kind, trigger)) }

	w.ask("a", triggerProfile)
	w.ask("a", triggerOwned+"ConfigMap") // served by the same pass
	w.ask("b", triggerResync)
	w.pass("a")
	w.pass("b")
	w.pass("a") // nothing asked since the last pass of a
	w.ask("a", triggerOwned+"ConfigMap")
	w.pass("a")

	got := map[string][2]float64{}
	for _, tr := range []string{triggerProfile, triggerOwned + "ConfigMap", triggerResync, triggerRequeue} {
		got[tr] = [2]float64{reconciles(tr), asks(tr)}
	}
	want := map[string][2]float64{
		triggerProfile:             {1, 1},
		triggerOwned + "ConfigMap": {1, 2},
		triggerResync:              {1, 1},
		triggerRequeue:             {1, 0},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("reconciles and wakes by trigger (-want +got):\n%s", d)
	}
	if n := len(w.first); n != 0 {
		t.Errorf("%d Profiles still remembered after their passes", n)
	}
}

// A nil wakes, as a Reconciler built without New has, counts nothing and
// does not fail.
func TestNilWakesCountNothing(t *testing.T) {
	var w *wakes
	w.ask("a", triggerProfile)
	w.pass("a")
}

// An event counts one wake per Profile its handler adds to the queue: an
// update whose old and new objects map to the same Profile is one, and the
// priorities a handler gives (the informers' first lists low) reach a
// priority queue.
func TestEnqueuedCountsOneWakePerEventAndProfile(t *testing.T) {
	kind := "enqueued-test"
	w := newWakes(kind)
	h := w.enqueued(triggerWatched+"ConfigMap", handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
	}))
	asks := func() float64 {
		return testutil.ToFloat64(wakesTotal.WithLabelValues(kind, triggerWatched+"ConfigMap"))
	}
	cm := func(rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x", ResourceVersion: rv}}
	}
	q := priorityqueue.New[reconcile.Request]("enqueued-test")
	defer q.ShutDown()

	h.Create(t.Context(), event.CreateEvent{Object: cm("1"), IsInInitialList: true}, q)
	req, prio, _ := q.GetWithPriority()
	if prio != handler.LowPriority {
		t.Errorf("the first list's request has priority %d, want %d: the priority queue was hidden from the handler", prio, handler.LowPriority)
	}
	q.Done(req)
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: cm("1"), ObjectNew: cm("2")}, q)
	if got := asks(); got != 2 {
		t.Errorf("a create and an update of one object counted %v wakes, want 2", got)
	}
	if q.Len() != 1 {
		t.Errorf("the queue holds %d requests after the update, want its Profile once", q.Len())
	}
}
