package opa

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// TestOneNamespaceIsWhatNewGrantsMakes: the large snapshots of these tests
// are the ones NewGrants makes of the same buckets.
func TestOneNamespaceIsWhatNewGrantsMakes(t *testing.T) {
	g := oneNamespace(t, 50)
	want, err := NewGrants(g.Buckets())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, g, cmp.AllowUnexported(Grants{})); diff != "" {
		t.Errorf("oneNamespace (-NewGrants +got):\n%s", diff)
	}
}

// TestDroppedIsLinear: the drop check of the 10 MB document seen on a real
// gateway (227,940 buckets granted to one namespace) is done within
// seconds, not minutes.
func TestDroppedIsLinear(t *testing.T) {
	const n = 227_940
	old, next := oneNamespace(t, n), oneNamespace(t, n-10)
	done := make(chan int, 1)
	start := time.Now()
	go func() { done <- Dropped(old, next) }()
	select {
	case got := <-done:
		if got != 10 {
			t.Errorf("Dropped = %d, want 10", got)
		}
		t.Logf("Dropped over %d grants in one namespace took %s", n, time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatalf("Dropped over %d grants in one namespace did not finish within 10s", n)
	}
	// Changed walks the same lists.
	start = time.Now()
	go func() { done <- len(Changed(old, next)) }()
	select {
	case got := <-done:
		if got != 1 {
			t.Errorf("Changed namespaces = %d, want 1", got)
		}
		t.Logf("Changed over %d grants in one namespace took %s", n, time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatalf("Changed over %d grants did not finish within 10s", n)
	}
}

// TestStateDoesNotWaitForATake: readers of a source's State (every
// reconcile) never wait while a large document is being taken.
func TestStateDoesNotWaitForATake(t *testing.T) {
	const n = 40_000
	tr := &tracker{name: "huge", maxDrop: DefaultMaxDropShare}
	ctx := t.Context()
	tr.offer(ctx, oneNamespace(t, n), nil)
	next := oneNamespace(t, n-n/100)

	var taking atomic.Bool
	taking.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.offer(ctx, next, nil)
		taking.Store(false)
	}()
	var slowest time.Duration
	reads := 0
	for taking.Load() {
		start := time.Now()
		st := tr.State()
		if d := time.Since(start); d > slowest {
			slowest = d
		}
		if !st.Synced {
			t.Fatal("State lost the snapshot while a document was taken")
		}
		reads++
		if slowest > time.Second {
			break
		}
	}
	<-done
	if slowest > 500*time.Millisecond {
		t.Errorf("State() waited %s while a document of %d grants was taken; want no wait", slowest.Round(time.Millisecond), n)
	}
	if got := tr.State().Grants.Len(); got != n-n/100 {
		t.Errorf("grants after the take = %d, want %d", got, n-n/100)
	}
	t.Logf("%d State() reads during the take, the slowest %s", reads, slowest)
}

// TestFirstDocumentIsCheckedAgainstTheBaseline: after a start, the first
// document is held to the drop guard against the grants in use, as a later
// one is against the last snapshot; a refusal leaves the source not synced.
func TestFirstDocumentIsCheckedAgainstTheBaseline(t *testing.T) {
	ctx := t.Context()
	doc := func(readers ...string) Grants {
		var bs []Bucket
		for _, v := range []string{"census-1", "census-2", "census-3", "census-4"} {
			bs = append(bs, Bucket{Name: v, Readers: readers})
		}
		g, err := NewGrants(bs)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	inUse := []Grant{{"a", "census-1"}, {"a", "census-2"}, {"b", "census-1"}, {"b", "census-2"}}
	var baseErr error
	calls := 0
	start := func() *tracker {
		return &tracker{name: "restart", maxDrop: 0.5, baseline: func(context.Context) ([]Grant, error) {
			calls++
			return inUse, baseErr
		}}
	}
	reason := func(t *testing.T, st State, want string) {
		t.Helper()
		var re *RefreshError
		if !errors.As(st.Err, &re) || re.Reason != want {
			t.Fatalf("state error = %v, want reason %s", st.Err, want)
		}
	}
	isSynced := func(tr *tracker) bool {
		select {
		case <-tr.Synced():
			return true
		default:
			return false
		}
	}

	t.Run("an empty document is refused and the source stays not synced", func(t *testing.T) {
		tr := start()
		if ns := tr.offer(ctx, Grants{}, nil); len(ns) != 0 {
			t.Errorf("notified %v on a refusal before any snapshot", ns)
		}
		st := tr.State()
		reason(t, st, ReasonDropTooLarge)
		if st.Synced || isSynced(tr) {
			t.Error("synced after a refused first document")
		}
		if !strings.Contains(st.Err.Error(), "withdraws 4 of 4 grants in use in the cluster") {
			t.Errorf("error = %v, want it to count the grants in use", st.Err)
		}
	})
	t.Run("a document that withdraws most of the grants in use is refused", func(t *testing.T) {
		tr := start()
		g, err := NewGrants([]Bucket{{Name: "census-1", Readers: []string{"a"}}})
		if err != nil {
			t.Fatal(err)
		}
		tr.offer(ctx, g, nil)
		reason(t, tr.State(), ReasonDropTooLarge)
		if !strings.Contains(tr.State().Err.Error(), "withdraws 3 of 4 grants in use in the cluster (75%), more than the 50% allowed at once") {
			t.Errorf("error = %v", tr.State().Err)
		}
	})
	t.Run("a document that withdraws the allowed share is taken", func(t *testing.T) {
		tr := start()
		tr.offer(ctx, doc("a"), nil)
		if st := tr.State(); !st.Synced || st.Err != nil {
			t.Errorf("state = %+v, want 2 of 4 withdrawn taken", st)
		}
	})
	t.Run("a document within the share is taken, and the namespaces of both hear", func(t *testing.T) {
		tr := start()
		g, err := NewGrants([]Bucket{{Name: "census-1", Readers: []string{"a", "b"}}, {Name: "census-9", Readers: []string{"c"}}})
		if err != nil {
			t.Fatal(err)
		}
		ns := tr.offer(ctx, g, nil)
		if diff := cmp.Diff([]string{"a", "b", "c"}, ns); diff != "" {
			t.Errorf("notified (-want +got):\n%s", diff)
		}
		if st := tr.State(); !st.Synced || st.Err != nil || !isSynced(tr) {
			t.Errorf("state = %+v, want synced", st)
		}
		// Later documents are checked against the snapshot, not the cluster.
		before := calls
		tr.offer(ctx, Grants{}, nil)
		reason(t, tr.State(), ReasonDropTooLarge)
		if calls != before {
			t.Errorf("the baseline was read %d times after the first snapshot", calls-before)
		}
	})
	t.Run("a baseline that cannot be read refuses the document", func(t *testing.T) {
		baseErr = errors.New("the API server is unreachable")
		defer func() { baseErr = nil }()
		tr := start()
		tr.offer(ctx, doc("a", "b"), nil)
		reason(t, tr.State(), ReasonNoBaseline)
		if tr.State().Synced {
			t.Error("synced without a baseline")
		}
		baseErr = nil
		tr.offer(ctx, doc("a", "b"), nil)
		if st := tr.State(); !st.Synced || st.Err != nil {
			t.Errorf("state = %+v, want the document taken once the baseline is read", st)
		}
	})
	t.Run("malformed and unreachable at the start keep it not synced", func(t *testing.T) {
		tr := start()
		tr.offer(ctx, Grants{}, &RefreshError{Source: "restart", Reason: ReasonMalformed, Err: errors.New("bad")})
		reason(t, tr.State(), ReasonMalformed)
		tr.offer(ctx, Grants{}, errors.New("connection refused"))
		reason(t, tr.State(), ReasonUnreachable)
		if tr.State().Synced {
			t.Error("synced")
		}
	})
	t.Run("with nothing in use any first document is taken", func(t *testing.T) {
		saved := inUse
		inUse = nil
		defer func() { inUse = saved }()
		tr := start()
		tr.offer(ctx, Grants{}, nil)
		if st := tr.State(); !st.Synced || st.Err != nil {
			t.Errorf("state = %+v, want synced", st)
		}
	})
}

// TestPollerRestartServedEmpty: a Poller made again (a restart) while OPA
// serves an empty list refuses it against the baseline.
func TestPollerRestartServedEmpty(t *testing.T) {
	ctx := t.Context()
	path := "restarttest" + rand.String(4)
	if err := srv.PutData(ctx, path, []any{}); err != nil {
		t.Fatal(err)
	}
	p, err := NewPoller("test-"+path, newClient(t), path, nil, Options{Interval: time.Hour,
		Baseline: func(context.Context) ([]Grant, error) { return []Grant{{"a", "census"}}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	p.Poll(ctx)
	st := p.State()
	var re *RefreshError
	if st.Synced || !errors.As(st.Err, &re) || re.Reason != ReasonDropTooLarge {
		t.Fatalf("state = %+v, want not synced, refused with %s", st, ReasonDropTooLarge)
	}
	if err := srv.PutData(ctx, path, list(map[string]any{"bucketName": "census", "readers": []string{"a"}})); err != nil {
		t.Fatal(err)
	}
	if ns := p.Poll(ctx); !cmp.Equal(ns, []string{"a"}) {
		t.Errorf("notified %v, want [a]", ns)
	}
	if st := p.State(); !st.Synced || st.Err != nil {
		t.Errorf("state = %+v, want synced", st)
	}
}

// TestChangesAreLoggedOnce: a refresh that changes the grants is logged,
// one that changes nothing (every poll of an unchanged document) is not,
// nor is the first document.
func TestChangesAreLoggedOnce(t *testing.T) {
	var changes []string
	logger := funcr.New(func(_, args string) {
		if strings.Contains(args, `"msg"="grants changed"`) || strings.Contains(args, `"grants changed"`) {
			changes = append(changes, args)
		}
	}, funcr.Options{})
	ctx := log.IntoContext(t.Context(), logger)
	grants := func(readers ...string) Grants {
		g, err := NewGrants([]Bucket{{Name: "census-1", Readers: readers}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	tr := &tracker{name: "logs", maxDrop: 1}
	for i, step := range []struct {
		g    Grants
		want int
	}{{grants("a"), 0}, {grants("a"), 0}, {grants("a", "b"), 1}, {grants("a", "b"), 1}} {
		tr.offer(ctx, step.g, nil)
		if len(changes) != step.want {
			t.Fatalf("after offer %d: %d lines say the grants changed, want %d: %v", i+1, len(changes), step.want, changes)
		}
	}
}
