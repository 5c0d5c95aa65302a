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

// newestFirst is a priority queue of Profiles' work in which every item
// that comes with no priority of its own (an event of the Profile, of an
// object it owns or of a kind mapped to it; a condition to write) takes the
// priority of its Profile: the second the Profile was created. Work that
// says it may wait (the resync, the initial list after a restart, both
// handler.LowPriority) keeps its priority, and a retry keeps the one it had.
//
// So a user who just signed up does not wait behind the Profiles of a bulk
// import or a host-wide change: under a backlog the newest Profile is served
// first, and every step of its first pass (the namespace, then each plugin,
// then its conditions) stays ahead of older work. The backlog itself takes
// as long as it would in any order.
type newestFirst[T comparable] struct {
	priorityqueue.PriorityQueue[T]
	profiles client.Reader
	// profile names the Profile an item is for.
	profile func(T) string
	// fresh, when set, is called for each item added to be served now
	// with its Profile's priority: an event, not a retry, a delay, the
	// resync or the restart's initial list.
	fresh func()
}

// newNewestFirstQueue returns the controller queue for a Reconciler that
// reads its Profiles through profiles; fresh is called for each event's
// item (see newestFirst.fresh).
func newNewestFirstQueue(profiles client.Reader, log logr.Logger, fresh func()) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := newestFirstQueue(name, limiter, profiles, log, func(req reconcile.Request) string { return req.Name })
		q.fresh = fresh
		return q
	}
}

// newestFirstQueue returns a newestFirst queue named name.
func newestFirstQueue[T comparable](name string, limiter workqueue.TypedRateLimiter[T], profiles client.Reader, log logr.Logger, profile func(T) string) newestFirst[T] {
	q := priorityqueue.New(name, func(o *priorityqueue.Opts[T]) {
		o.Log = log.WithValues("controller", name)
		o.RateLimiter = limiter
	})
	return newestFirst[T]{PriorityQueue: q, profiles: profiles, profile: profile}
}

func (q newestFirst[T]) Add(item T) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (q newestFirst[T]) AddAfter(item T, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (q newestFirst[T]) AddRateLimited(item T) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// AddWithOpts adds items, each at its Profile's priority unless o names one.
func (q newestFirst[T]) AddWithOpts(o priorityqueue.AddOpts, items ...T) {
	if o.Priority != nil {
		q.PriorityQueue.AddWithOpts(o, items...)
		return
	}
	now := o.After <= 0 && !o.RateLimited
	for _, item := range items {
		each := o
		each.Priority = q.priority(q.profile(item))
		q.PriorityQueue.AddWithOpts(each, item)
		if now && q.fresh != nil {
			q.fresh()
		}
	}
}

// priority returns the priority of the Profile's work: the Unix second of
// its creation, or nil (the queue's default) for a Profile that is gone.
// It reads the cache's own copy, without a deep copy, as it runs for every
// event and reads only the creation time.
func (q newestFirst[T]) priority(profile string) *int {
	var p kubeflowv1.Profile
	if err := q.profiles.Get(context.Background(), client.ObjectKey{Name: profile}, &p, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	at := int(p.CreationTimestamp.Unix())
	return &at
}
