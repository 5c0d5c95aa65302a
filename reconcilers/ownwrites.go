package reconcilers

// This file holds ownWrites: the host's record of its own writes of owned
// objects, so that the watch events of those writes do not bring the
// Profile back.

import (
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/profilekit/profilekit/plugins"
)

// ownWrites tells the watch events of a plugin's own writes from other
// changes. The event of a write carries the resource version the API server
// answered the write with, and says nothing the plugin does not know:
// passing it would bring the Profile back for a pass that finds the other
// objects of the same pass missing from a cache that has not caught up, and
// sends for each an apply refused as a Conflict and a read.
//
// An event may arrive before the answer to its write. While a write of an
// object is in flight, its events are held back and their versions kept;
// when the answer comes, a kept version other than the answer's means that
// someone else changed the object meanwhile, and the pass that wrote it is
// told to run again (passWrites.missed). After the answer, an event with the
// answer's version is dropped and any other passes.
//
// An entry lives until the event of the last write arrives. A write the API
// server answered without a change makes no event and leaves an entry, which
// the next write or event of the object replaces.
type ownWrites struct {
	mu     sync.Mutex
	writes map[writeKey]*ownWrite
}

// writeKey names an object of a kind.
type writeKey struct {
	gk              schema.GroupKind
	namespace, name string
}

// ownWrite is what is known of the writes of one object.
type ownWrite struct {
	// inFlight counts writes sent and not yet answered.
	inFlight int
	// version is the answer to the last write; empty until one came.
	version string
	// held are the versions of the events held back while a write was in
	// flight.
	held []string
	// hash is the applied hash of the write answered with version.
	hash string
}

func newOwnWrites() *ownWrites { return &ownWrites{writes: map[writeKey]*ownWrite{}} }

func keyOf(gk schema.GroupKind, o client.Object) writeKey {
	return writeKey{gk: gk, namespace: o.GetNamespace(), name: o.GetName()}
}

// begin records a write of the object at k about to be sent.
func (w *ownWrites) begin(k writeKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.writes[k]
	if e == nil {
		e = &ownWrite{}
		w.writes[k] = e
	}
	e.inFlight++
}

// end records the answer to a write of the object at k with applied hash
// hash: its version, or "" when the write failed. It reports whether an
// event held back meanwhile was not this write's.
func (w *ownWrites) end(k writeKey, version, hash string) (missed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.writes[k]
	if e == nil {
		return false
	}
	e.inFlight--
	echoed := false
	for _, v := range e.held {
		if v == version {
			echoed = true
		} else {
			missed = true
		}
	}
	e.held = nil
	e.version, e.hash = version, hash
	if e.inFlight == 0 && (echoed || version == "") {
		delete(w.writes, k)
	}
	return missed
}

// event decides on an event that brings the object at k at version: false
// drops it as the echo of our write, or holds it back while a write is in
// flight.
func (w *ownWrites) event(k writeKey, version string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.writes[k]
	switch {
	case e == nil:
		return true
	case e.inFlight > 0:
		if !slices.Contains(e.held, version) {
			e.held = append(e.held, version)
		}
		return false
	}
	delete(w.writes, k)
	return e.version != version
}

// unseen returns the applied hash of the last write of the object at k
// that the API server took and whose event has not come: the cache does
// not show that write yet. An entry whose write made no event (the API
// server found nothing to change) is no such write, but its object is in
// the cache, where the Applier looks first; and a deletion forgets it.
func (w *ownWrites) unseen(k writeKey) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.writes[k]
	if e == nil || e.inFlight > 0 || e.version == "" {
		return "", false
	}
	return e.hash, true
}

// forget drops what is known of the writes of the object at k, which is
// gone.
func (w *ownWrites) forget(k writeKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.writes, k)
}

// len returns how many objects have a write in flight or an event to come.
func (w *ownWrites) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

// predicate passes every event of an owned object of kind gvk but those of
// our own writes. Objects from the cache do not always carry their kind;
// the watch knows it.
func (w *ownWrites) predicate(gvk schema.GroupVersionKind) predicate.Predicate {
	gk := gvk.GroupKind()
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return w.event(keyOf(gk, e.Object), e.Object.GetResourceVersion()) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return w.event(keyOf(gk, e.ObjectNew), e.ObjectNew.GetResourceVersion())
		},
		// A deletion always passes: no write of ours deletes through the
		// Applier's observer. What was known of its writes is forgotten, so
		// that no recalled write stands for an object that is gone.
		DeleteFunc: func(e event.DeleteEvent) bool {
			w.forget(keyOf(gk, e.Object))
			return true
		},
	}
}

// pass returns the observer of one pass's Applier.
func (w *ownWrites) pass() *passWrites { return &passWrites{own: w} }

// passWrites observes the writes of one pass (apply.WriteObserver).
type passWrites struct {
	own *ownWrites
	// missed says that an event held back during a write of this pass was
	// someone else's: the pass must run again to look at it.
	missed bool
	// sent says that the pass sent a write.
	sent atomic.Bool
}

func (p *passWrites) Writing(o client.Object) {
	p.sent.Store(true)
	p.own.begin(keyOf(o.GetObjectKind().GroupVersionKind().GroupKind(), o))
}

func (p *passWrites) Wrote(o client.Object, version string, _ error) {
	if p.own.end(keyOf(o.GetObjectKind().GroupVersionKind().GroupKind(), o), version, o.GetAnnotations()[plugins.AnnotationAppliedHash]) {
		p.missed = true
	}
}

// Unseen recalls a write of o by any pass whose event has not come
// (apply.WriteRecall).
func (p *passWrites) Unseen(o client.Object) (string, bool) {
	return p.own.unseen(keyOf(o.GetObjectKind().GroupVersionKind().GroupKind(), o))
}
