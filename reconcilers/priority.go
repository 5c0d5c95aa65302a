package reconcilers

// This file holds the order in which a Reconciler's queue serves Profiles:
// the newest Profile first, resync and restart work last.

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// newestFirst is a priority queue of Profiles in which every piece of work
// that comes with no priority of its own (an event of the Profile, of an
// object it owns or of a kind mapped to it) takes the priority of its
// Profile: the second the Profile was created. Work that says it may wait
// (the resync, the initial list after a restart, both handler.LowPriority)
// keeps its priority, and a retry keeps the one it had.
//
// So a user who just signed up does not wait behind the Profiles of a bulk
// import or a host-wide change: under a backlog the newest Profile is served
// first, and every step of its first pass (the namespace, then each plugin)
// stays ahead of older work. The backlog itself takes as long as it would in
// any order.
type newestFirst struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	profiles client.Reader
}

// newNewestFirstQueue returns the controller queue for a Reconciler that
// reads its Profiles through profiles.
func newNewestFirstQueue(profiles client.Reader, log logr.Logger) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
			o.Log = log.WithValues("controller", name)
			o.RateLimiter = limiter
		})
		return newestFirst{PriorityQueue: q, profiles: profiles}
	}
}

func (q newestFirst) Add(req reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, req)
}

func (q newestFirst) AddAfter(req reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, req)
}

func (q newestFirst) AddRateLimited(req reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, req)
}

// AddWithOpts adds reqs, each at its Profile's priority unless o names one.
func (q newestFirst) AddWithOpts(o priorityqueue.AddOpts, reqs ...reconcile.Request) {
	if o.Priority != nil {
		q.PriorityQueue.AddWithOpts(o, reqs...)
		return
	}
	for _, req := range reqs {
		each := o
		each.Priority = q.priority(req.Name)
		q.PriorityQueue.AddWithOpts(each, req)
	}
}

// priority returns the priority of the Profile's work: the Unix second of
// its creation, or nil (the queue's default) for a Profile that is gone.
func (q newestFirst) priority(profile string) *int {
	var p kubeflowv1.Profile
	if err := q.profiles.Get(context.Background(), client.ObjectKey{Name: profile}, &p); err != nil {
		return nil
	}
	at := int(p.CreationTimestamp.Unix())
	return &at
}
