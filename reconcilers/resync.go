package reconcilers

import (
	"context"
	"hash/fnv"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

const (
	// resyncSlots is how many parts a resync period is cut into.
	resyncSlots = 60
	// minResyncSlot is the shortest part: a short period (as in tests) has
	// fewer slots, each with a larger share of the Profiles.
	minResyncSlot = 100 * time.Millisecond
)

// resyncSource enqueues every Profile in the shard once per resync period.
// The period is cut into slots and a Profile belongs to the slot its name
// hashes to, so that Profiles spread evenly over the period and each one
// comes back at the same offset every period. The first period starts when
// the controller does, whose first pass reconciles every Profile anyway.
//
// One timer per controller replaces a delayed requeue per Profile. A
// delayed requeue keeps a queue item and its time for every Profile for the
// whole period, and a full pass makes them among the garbage of every
// reconcile: small objects that live long there keep whole heap spans in
// use, most of them otherwise free.
func (r *Reconciler) resyncSource() source.TypedSource[reconcile.Request] {
	return source.TypedFunc[reconcile.Request](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go r.runResync(ctx, q)
		return nil
	})
}

// runResync runs resyncSource's timer until ctx ends.
func (r *Reconciler) runResync(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	// The informers' first events have just brought every Profile to the
	// controller: the first resync is due a period later, as it would be
	// for a Profile reconciled now.
	wait := time.NewTimer(r.resync)
	defer wait.Stop()
	select {
	case <-ctx.Done():
		return
	case <-wait.C:
	}
	slots := slotsFor(r.resync)
	tick := time.NewTicker(r.resync / time.Duration(slots))
	defer tick.Stop()
	for slot := 0; ; slot = (slot + 1) % slots {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, req := range r.everyProfile(ctx, nil) {
			if slotOf(req.Name, slots) == slot {
				r.wakes.ask(req.Name, triggerResync)
				enqueueLow(q, req)
			}
		}
	}
}

// slotsFor returns how many slots a resync period has.
func slotsFor(period time.Duration) int {
	return int(max(1, min(resyncSlots, period/minResyncSlot)))
}

// slotOf returns the slot of the Profile named name among slots.
func slotOf(name string, slots int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % uint32(slots))
}

// enqueueLow adds req behind every change waiting in a priority queue: a
// resync finds nothing to do unless something was missed, so Profiles that
// changed go first.
func enqueueLow(q workqueue.TypedRateLimitingInterface[reconcile.Request], req reconcile.Request) {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		low := handler.LowPriority
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, req)
		return
	}
	q.Add(req)
}
