package reconcilers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// TestInFlightGateOrder: with its one place taken, the gate hands the place
// to the waiter of highest priority, first come among equals; a waiter whose
// context ends leaves without a place, and a place granted to a waiter that
// gave up goes on to the next.
func TestInFlightGateOrder(t *testing.T) {
	g := newInFlightGate(1)
	if err := g.acquire(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	queued := 0
	wait := func(name string, priority int) {
		wg.Go(func() {
			if err := g.acquire(t.Context(), priority); err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			g.release()
		})
		// Let it queue before the next comes.
		queued++
		for ; ; time.Sleep(time.Millisecond) {
			g.mu.Lock()
			n := len(g.waiting)
			g.mu.Unlock()
			if n == queued {
				break
			}
		}
	}
	// One waiter gives up while it waits.
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- g.acquire(ctx, 100) }()
	for {
		g.mu.Lock()
		n := len(g.waiting)
		g.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended got %v, want context.Canceled", err)
	}

	wait("old-1", 10)
	wait("new", 30)
	wait("old-2", 10)
	wait("middle", 20)
	g.release()
	wg.Wait()
	if diff := cmp.Diff([]string{"new", "middle", "old-1", "old-2"}, order); diff != "" {
		t.Errorf("order of places (-want +got):\n%s", diff)
	}
	if g.free != 1 || len(g.waiting) != 0 {
		t.Errorf("after all released: %d free, %d waiting; want 1 and 0", g.free, len(g.waiting))
	}
}

// TestInFlightGateAging: once a waiter of low priority has waited maxWait
// (or, with a deadline, a third of the time it had left), every other place
// goes to the longest waiting, although newer waiters of higher priority
// keep coming, and those get the places between; before that, priority
// decides.
func TestInFlightGateAging(t *testing.T) {
	g := newInFlightGate(1)
	// Longer than a third of the 6 s deadline below, so that the deadline
	// rule shows.
	g.maxWait = 5 * time.Second
	var mu sync.Mutex
	clock := time.Unix(0, 0)
	g.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	if err := g.acquire(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 8)
	queue := func(ctx context.Context, name string, priority int) {
		g.mu.Lock()
		n := len(g.waiting)
		g.mu.Unlock()
		go func() {
			if err := g.acquire(ctx, priority); err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			granted <- name
		}()
		for ; ; time.Sleep(time.Millisecond) {
			g.mu.Lock()
			m := len(g.waiting)
			g.mu.Unlock()
			if m == n+1 {
				return
			}
		}
	}
	next := func() string {
		g.release()
		select {
		case name := <-granted:
			return name
		case <-time.After(5 * time.Second):
			t.Fatal("no waiter got the place")
			return ""
		}
	}
	ctx := t.Context()
	queue(ctx, "old-a", 1)
	queue(ctx, "old-b", 1)
	queue(ctx, "new-1", 9)
	if got := next(); got != "new-1" {
		t.Errorf("before maxWait the place went to %s, want new-1 (highest priority)", got)
	}
	advance(g.maxWait)
	queue(ctx, "new-2", 9)
	queue(ctx, "new-3", 9)
	var got []string
	for range 4 {
		got = append(got, next())
	}
	if diff := cmp.Diff([]string{"new-2", "old-a", "new-3", "old-b"}, got); diff != "" {
		t.Errorf("after the old ones waited maxWait, order of places (-want +got; every other place to the longest waiting):\n%s", diff)
	}

	// With the place still held by new-3: a deadline 6 s away (on the fake
	// clock) is promoted after 2 s, not maxWait.
	mu.Lock()
	start := clock
	mu.Unlock()
	deadlined := deadlineAt{Context: ctx, at: start.Add(6 * time.Second)}
	queue(deadlined, "short-deadline", 1)
	queue(ctx, "new-4", 9)
	advance(time.Second)
	queue(ctx, "new-5", 9)
	if got := next(); got != "new-4" {
		t.Errorf("after 1 s of a 6 s deadline the place went to %s, want new-4 (highest priority)", got)
	}
	queue(ctx, "new-6", 9)
	advance(time.Second)
	if got := next(); got != "new-5" {
		t.Errorf("after 2 s of a 6 s deadline the first place went to %s, want new-5 (highest priority)", got)
	}
	if got := next(); got != "short-deadline" {
		t.Errorf("after 2 s of a 6 s deadline the second place went to %s, want short-deadline", got)
	}
	if got := next(); got != "new-6" {
		t.Errorf("last place went to %s, want new-6", got)
	}
	g.release()
	if g.free != 1 || len(g.waiting) != 0 || g.arrived.Len() != 0 {
		t.Errorf("after all released: %d free, %d waiting, %d in arrival order; want 1, 0, 0", g.free, len(g.waiting), g.arrived.Len())
	}
}

// TestInFlightGateEndedContext: a careless operator's request timeout that
// has already run out (or a reconcile cancelled at shutdown) gets its
// context's error at once, takes no place and leaves no waiter behind that
// would hold the next request.
func TestInFlightGateEndedContext(t *testing.T) {
	g := newInFlightGate(1)
	if err := g.acquire(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	if err := g.acquire(ended, 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request whose deadline had passed got %v, want context.DeadlineExceeded", err)
	}
	g.mu.Lock()
	waiting, arrived := len(g.waiting), g.arrived.Len()
	g.mu.Unlock()
	if waiting != 0 || arrived != 0 {
		t.Errorf("after the ended request left: %d waiting, %d in arrival order; want none", waiting, arrived)
	}
	got := make(chan error, 1)
	go func() { got <- g.acquire(t.Context(), 1) }()
	g.release()
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("the next request: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the next request did not get the place the first gave back")
	}
}

// deadlineAt is a context that reports a deadline on the test's fake clock
// while its real one is far away.
type deadlineAt struct {
	context.Context
	at time.Time
}

func (d deadlineAt) Deadline() (time.Time, bool) { return d.at, true }

// TestLimitInFlightHoldsPassesOnly: at most n requests of passes reach the
// server at once; a request sent outside a pass (a watch, a status write)
// goes at once however many passes wait.
func TestLimitInFlightHoldsPassesOnly(t *testing.T) {
	const n = 3
	var now, most atomic.Int32
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/outside" {
			return
		}
		c := now.Add(1)
		for m := most.Load(); c > m; m = most.Load() {
			if most.CompareAndSwap(m, c) {
				break
			}
		}
		<-hold
		now.Add(-1)
	}))
	defer srv.Close()
	cfg := LimitInFlight(&rest.Config{Host: srv.URL}, n)
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt}
	get := func(ctx context.Context, path string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	var wg sync.WaitGroup
	for i := range 3 * n {
		wg.Go(func() {
			if err := get(withPassPriority(t.Context(), i), "/pass"); err != nil {
				t.Error(err)
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for now.Load() < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	outside, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := get(outside, "/outside"); err != nil {
		t.Errorf("a request outside a pass, with %d passes waiting: %v", 2*n, err)
	}
	close(hold)
	wg.Wait()
	if got := most.Load(); got != n {
		t.Errorf("at most %d requests of passes at the server at once, want %d", got, n)
	}
}

// TestLimitInFlightOrdersUnderARateLimit: with a shared client rate limit,
// a request of the newest Profile's pass takes one of the next few turns
// (those already promised when it came), not a turn behind every request
// the other passes have queued or hold places for.
func TestLimitInFlightOrdersUnderARateLimit(t *testing.T) {
	const n, queued = 8, 30
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
	}))
	defer srv.Close()
	cfg := LimitInFlight(RateLimited(&rest.Config{Host: srv.URL}, 50, 1), n)
	// A REST client, as the host's clients are: client-go waits for the
	// rate limiter of its config before the transport.
	rc, err := rest.UnversionedRESTClientFor(&rest.Config{Host: cfg.Host, RateLimiter: cfg.RateLimiter, WrapTransport: cfg.WrapTransport,
		ContentConfig: rest.ContentConfig{NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(priority int, path string) {
		if err := rc.Get().AbsPath(path).Do(withPassPriority(t.Context(), priority)).Error(); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	for range queued {
		wg.Go(func() { get(1, "/old") })
	}
	// Let the old passes' requests queue up.
	g := cfg.WrapTransport(nil).(gated).gate
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		w := len(g.waiting)
		g.mu.Unlock()
		if w >= queued-n-2 {
			break
		}
	}
	get(2, "/new")
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	before := slices.Index(seen, "/new")
	if before < 0 || before > 3 {
		t.Errorf("the newest Profile's request was served after %d others (of %d queued, %d holding places), want at most 3", before, queued, n)
	}
}
