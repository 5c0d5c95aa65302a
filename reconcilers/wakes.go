package reconcilers

// This file holds wakes: what asked for each pass of a plugin (a change of
// the Profile, of an owned object, of a watched kind, the resync timer, a
// requeue), counted so that operators and the benchmark see which events
// wake a plugin, and how often for nothing.

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The triggers of a pass: the values of the trigger label of
// profilekit_plugin_wakes_total and profilekit_plugin_reconciles_total.
// Owned and watched kinds add their kind: "owned/RoleBinding".
const (
	// triggerProfile is a change of the Profile: created, deleted, its
	// spec, labels, finalizers or deletion.
	triggerProfile = "profile"
	// triggerOwned is a change of one of the plugin's own objects that
	// its own writes do not explain (a hand edit, a deletion).
	triggerOwned = "owned/"
	// triggerWatched is a change of an object of a kind in the
	// definition's Watches that its Changed lets through.
	triggerWatched = "watched/"
	// triggerNamespace is a change of a Profile's namespace that the
	// namespace gate reads (WithNamespaceGate): it appeared, its
	// ownership changed, or it is being deleted.
	triggerNamespace = "namespace"
	// triggerResync is the resync timer.
	triggerResync = "resync"
	// triggerRunner is the definition's Runner.
	triggerRunner = "runner"
	// triggerRollout is a staged rollout moving a Profile (WithStaged).
	triggerRollout = "rollout"
	// triggerHandOver is the finalizer hand-over's back-off ending.
	triggerHandOver = "handover"
	// triggerRequeue is a pass nothing asked for since the last one: a
	// retry after an error, or a look again that a pass asked for.
	triggerRequeue = "requeue"
)

var (
	wakesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_plugin_wakes_total",
		Help: "Events that asked for a pass of a plugin, by plugin kind and trigger; several may be served by one pass.",
	}, []string{"plugin", "trigger"})
	reconcilesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_plugin_reconciles_total",
		Help: "Passes of a plugin, by plugin kind and the trigger of the first event that asked for it (requeue when none did).",
	}, []string{"plugin", "trigger"})
)

func init() { metrics.Registry.MustRegister(wakesTotal, reconcilesTotal) }

// wakes remembers, per Profile, the first trigger that asked for its next
// pass. An entry lives from an event to the start of the pass it asked
// for.
type wakes struct {
	kind string
	mu   sync.Mutex
	// first is the first trigger asked since the Profile's last pass began.
	first map[string]string
	// peak is the most entries first held since it was made.
	peak int
}

func newWakes(kind string) *wakes { return &wakes{kind: kind, first: map[string]string{}} }

// ask records that trigger asked for a pass of the Profile named name.
func (w *wakes) ask(name, trigger string) {
	if w == nil {
		return
	}
	wakesTotal.WithLabelValues(w.kind, trigger).Inc()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.first[name]; !ok {
		w.first[name] = trigger
		w.peak = max(w.peak, len(w.first))
	}
}

// pass counts a pass of the Profile named name under the trigger that
// first asked for it, and forgets it.
func (w *wakes) pass(name string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	trigger, ok := w.first[name]
	delete(w.first, name)
	if len(w.first) == 0 && w.peak > 1024 {
		// A map keeps its largest size: after a burst (a host's first
		// pass over every Profile) a new one gives the memory back.
		w.first, w.peak = map[string]string{}, 0
	}
	w.mu.Unlock()
	if !ok {
		trigger = triggerRequeue
	}
	reconcilesTotal.WithLabelValues(w.kind, trigger).Inc()
}

// enqueued returns h, recording trigger for each request it adds to the
// queue: once per event and Profile, as h adds them (an update maps its
// old and its new object, and adds a Profile they share once).
func (w *wakes) enqueued(trigger string, h handler.EventHandler) handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	counted := func(q queue) queue {
		if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
			return askingPriorityQueue{PriorityQueue: pq, ask: func(r reconcile.Request) { w.ask(r.Name, trigger) }}
		}
		return askingQueue{TypedRateLimitingInterface: q, ask: func(r reconcile.Request) { w.ask(r.Name, trigger) }}
	}
	return handler.Funcs{
		CreateFunc:  func(ctx context.Context, e event.CreateEvent, q queue) { h.Create(ctx, e, counted(q)) },
		UpdateFunc:  func(ctx context.Context, e event.UpdateEvent, q queue) { h.Update(ctx, e, counted(q)) },
		DeleteFunc:  func(ctx context.Context, e event.DeleteEvent, q queue) { h.Delete(ctx, e, counted(q)) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { h.Generic(ctx, e, counted(q)) },
	}
}

// askingQueue records an ask for every request added to it.
type askingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	ask func(reconcile.Request)
}

func (q askingQueue) Add(r reconcile.Request) { q.ask(r); q.TypedRateLimitingInterface.Add(r) }

func (q askingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.ask(r)
	q.TypedRateLimitingInterface.AddAfter(r, d)
}

func (q askingQueue) AddRateLimited(r reconcile.Request) {
	q.ask(r)
	q.TypedRateLimitingInterface.AddRateLimited(r)
}

// askingPriorityQueue is askingQueue for a priority queue, which the
// handlers add to with priorities (the informers' first lists low).
type askingPriorityQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	ask func(reconcile.Request)
}

func (q askingPriorityQueue) Add(r reconcile.Request) { q.ask(r); q.PriorityQueue.Add(r) }

func (q askingPriorityQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.ask(r)
	q.PriorityQueue.AddAfter(r, d)
}

func (q askingPriorityQueue) AddRateLimited(r reconcile.Request) {
	q.ask(r)
	q.PriorityQueue.AddRateLimited(r)
}

func (q askingPriorityQueue) AddWithOpts(o priorityqueue.AddOpts, rs ...reconcile.Request) {
	for _, r := range rs {
		q.ask(r)
	}
	q.PriorityQueue.AddWithOpts(o, rs...)
}

// asked is a predicate that passes every event and records trigger for
// its object; it goes last among a watch's predicates, so that it sees only
// the events that wake the Profile of the object's name.
func (w *wakes) asked(trigger string) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { w.ask(e.Object.GetName(), trigger); return true },
		UpdateFunc:  func(e event.UpdateEvent) bool { w.ask(e.ObjectNew.GetName(), trigger); return true },
		DeleteFunc:  func(e event.DeleteEvent) bool { w.ask(e.Object.GetName(), trigger); return true },
		GenericFunc: func(e event.GenericEvent) bool { w.ask(e.Object.GetName(), trigger); return true },
	}
}
