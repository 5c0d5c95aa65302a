package reconcilers

// This file holds the gate that keeps the requests of Reconcilers' passes
// to a number in flight, the newest Profile's first.

import (
	"container/heap"
	"container/list"
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// DefaultMaxInFlight is how many requests of Reconcilers' passes a host
// has in flight at most, by default (see LimitInFlight).
const DefaultMaxInFlight = 32

// LimitInFlight returns a copy of cfg under which the requests sent by
// Reconcilers' passes wait for one of n places before they go, the pass of
// the newest Profile first (its priority in the Reconciler's queue, see
// newestFirst); n <= 0 leaves cfg as it is. Other requests (watches, the
// informers' lists, status and leader-election writes) go at once.
//
// A host with more passes under way than the API server can serve at once
// only lengthens the API server's own queue: every request then waits
// behind all the others, those of a Profile a user just created too. Held
// here instead, the waiting requests are ordered, and the API server stays
// as busy as n requests keep it.
//
// A request that has waited 1 s, or a third of the time it had left to its
// deadline if that is sooner (see maxGateWait), takes every other place,
// first come first: the passes of older Profiles, started before a burst of
// new ones, are put behind them for a while, never until their requests
// time out (the wait counts in the request's timeout, see WithTimeout); and
// the newest Profile's requests still get the places between, so that a
// long backlog of such requests does not put it behind all of them.
//
// A client rate limiter that cfg shares between its clients (RateLimited)
// is taken behind the places: a pass's request waits for its place, then
// for its turn under the limit, and the turns go one at a time, the newest
// Profile's first too. Under a rate limit the newest Profile's request
// then waits about one request's turn, not behind every request the passes
// have queued. Requests outside passes wait for the limit alone.
func LimitInFlight(cfg *rest.Config, n int) *rest.Config {
	rc := rest.CopyConfig(cfg)
	if n <= 0 {
		return rc
	}
	// One gate and one line of turns for every transport made from rc.
	g, turn := newInFlightGate(n), newInFlightGate(1)
	limiter := rc.RateLimiter
	if limiter != nil {
		rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return gated{next: rt, gate: g, turn: turn, limiter: limiter}
	})
	return rc
}

// passPriorityKey is the context key of a pass's priority.
type passPriorityKey struct{}

// withPassPriority returns ctx for the requests of a pass at priority p
// (higher first).
func withPassPriority(ctx context.Context, p int) context.Context {
	return context.WithValue(ctx, passPriorityKey{}, p)
}

// passPriority returns the priority of the pass that sends a request, if
// one does.
func passPriority(ctx context.Context) (int, bool) {
	p, ok := ctx.Value(passPriorityKey{}).(int)
	return p, ok
}

// gated sends the requests of passes through the gate, and every request
// through the limiter, if there is one: those of passes one at a time, by
// priority (turn).
type gated struct {
	next    http.RoundTripper
	gate    *inFlightGate
	turn    *inFlightGate
	limiter flowcontrol.RateLimiter
}

func (g gated) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	p, ok := passPriority(ctx)
	if !ok || req.URL.Query().Get("watch") == "true" {
		if g.limiter != nil {
			if err := g.limiter.Wait(ctx); err != nil {
				return nil, err
			}
		}
		return g.next.RoundTrip(req)
	}
	if err := g.gate.acquire(ctx, p); err != nil {
		return nil, err
	}
	defer g.gate.release()
	if g.limiter != nil {
		if err := g.turn.acquire(ctx, p); err != nil {
			return nil, err
		}
		err := g.limiter.Wait(ctx)
		g.turn.release()
		if err != nil {
			return nil, err
		}
	}
	return g.next.RoundTrip(req)
}

// maxGateWait is how long a request of a pass waits at most before it
// takes every other place from those of higher priority; one with a
// deadline does once it has waited a third of the time its context had left
// when it came into line, if that is sooner. Only the requests that newer
// Profiles kept passing (the passes started while Profiles were still being
// created) wait that long; the rest of the time to their deadline is for
// the places of those promoted with them, the client rate limit and the
// request itself. It is short because a pass holds its worker while its
// requests wait: the longer old passes wait, the longer a new Profile waits
// for a worker of each plugin. The newest Profile's requests keep every
// other place however many have waited that long.
const maxGateWait = 1 * time.Second

// inFlightGate hands out n places, to the waiter of highest priority first
// and, among equals, to the one that came first; while a waiter has waited
// long (see maxGateWait), every other place goes to the longest waiting.
type inFlightGate struct {
	mu      sync.Mutex
	free    int
	next    uint64
	waiting waiters
	// arrived holds the same waiters as waiting, in the order they came.
	arrived list.List
	// agedTurn says the next place goes to the longest waiting, if it has
	// waited long: the last went to the highest priority while it had.
	agedTurn bool
	maxWait  time.Duration
	now      func() time.Time
}

func newInFlightGate(n int) *inFlightGate {
	return &inFlightGate{free: n, maxWait: maxGateWait, now: time.Now}
}

// acquire waits for a place, or until ctx is done.
func (g *inFlightGate) acquire(ctx context.Context, priority int) error {
	g.mu.Lock()
	if g.free > 0 && len(g.waiting) == 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	now := g.now()
	promote := now.Add(g.maxWait)
	if d, ok := ctx.Deadline(); ok {
		if p := now.Add(d.Sub(now) / 3); p.Before(promote) {
			promote = p
		}
	}
	w := &waiter{priority: priority, seq: g.next, promote: promote, granted: make(chan struct{})}
	g.next++
	heap.Push(&g.waiting, w)
	w.arrival = g.arrived.PushBack(w)
	g.mu.Unlock()

	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		if w.index >= 0 {
			heap.Remove(&g.waiting, w.index)
			g.arrived.Remove(w.arrival)
			g.mu.Unlock()
			return ctx.Err()
		}
		g.mu.Unlock()
		// Granted meanwhile: the place goes to the next waiter.
		g.release()
		return ctx.Err()
	}
}

// release gives a place back, to a waiter if there is one: the one of
// highest priority, or, every other time while the longest waiting has
// waited long enough, that one.
func (g *inFlightGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.waiting) == 0 {
		g.free++
		return
	}
	w := g.arrived.Front().Value.(*waiter)
	aged := !g.now().Before(w.promote)
	if aged && (g.agedTurn || w == g.waiting[0]) {
		heap.Remove(&g.waiting, w.index)
		g.agedTurn = false
	} else {
		w = heap.Pop(&g.waiting).(*waiter)
		g.agedTurn = aged
	}
	g.arrived.Remove(w.arrival)
	close(w.granted)
}

// waiter is a request waiting for a place, to go first of all from promote
// on; index is its place in the heap, -1 once it left it, and arrival its
// place in the order of arrival.
type waiter struct {
	priority int
	seq      uint64
	promote  time.Time
	granted  chan struct{}
	index    int
	arrival  *list.Element
}

// waiters is a heap of waiters, highest priority first, then first come.
type waiters []*waiter

func (h waiters) Len() int { return len(h) }
func (h waiters) Less(i, j int) bool {
	if h[i].priority != h[j].priority {
		return h[i].priority > h[j].priority
	}
	return h[i].seq < h[j].seq
}
func (h waiters) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waiters) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waiters) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.index = -1
	return w
}
