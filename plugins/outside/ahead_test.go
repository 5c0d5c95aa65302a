package outside_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins/outside"
)

// TestOutsideRemovedPieceIsMadeAgainWhileTheCacheIsBehind: a piece removed
// by one pass and named again by the next, whose cache still shows the
// record from before the removal, is made true again. Trusting that copy
// would skip the call and leave the piece missing (a trust statement, a
// grant) while every record says it is there, until the next resync.
func TestOutsideRemovedPieceIsMadeAgainWhileTheCacheIsBehind(t *testing.T) {
	ctx := t.Context()
	server := outsideClient(t)
	p := newProfile(nil)
	records := outside.NewRecords()
	record := func(c client.Client) *outside.Outside {
		return outside.New(c, "iam", p, outside.Options{},
			outside.WithLiveReader(server), outside.WithRecords(records))
	}
	made := calls{}
	pass(t, record(server), made, map[string]any{"role/a": 1, "role/b": 2})
	var before corev1.ConfigMap
	if err := server.Get(ctx, recordOf("iam"), &before); err != nil {
		t.Fatal(err)
	}

	// The Profile stops naming role/a: the sweep removes it.
	o := record(server)
	err := o.Sweep(ctx, func(k string) (string, bool) { return k, k == "role/a" },
		func(context.Context, string, []string) error { made["role/a"]--; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// It names role/a again; the cache still holds the record from before.
	behind := cacheView{Client: server, shows: map[string]*corev1.ConfigMap{before.Name: &before}}
	pass(t, record(behind), made, map[string]any{"role/a": 1, "role/b": 2})
	if diff := cmp.Diff(calls{"role/a": 1, "role/b": 1}, made); diff != "" {
		t.Errorf("pieces in place after the pass (-want +got):\n%s", diff)
	}

	// Once the cache shows the last write, a pass reads from it and calls
	// nothing.
	var now corev1.ConfigMap
	if err := server.Get(ctx, recordOf("iam"), &now); err != nil {
		t.Fatal(err)
	}
	live := &countingReader{Reader: server}
	settled := calls{}
	o = outside.New(cacheView{Client: server, shows: map[string]*corev1.ConfigMap{now.Name: &now}}, "iam", p, outside.Options{},
		outside.WithLiveReader(live), outside.WithRecords(records))
	pass(t, o, settled, map[string]any{"role/a": 1, "role/b": 2})
	if len(settled) != 0 || live.n != 0 {
		t.Errorf("a pass over a cache that shows the last write: calls %v, reads from the API server %d; want none", settled, live.n)
	}
}

// refusedRecord is a client whose writes of ConfigMaps are refused.
type refusedRecord struct{ client.Client }

var errRefused = errors.New("refused by an admission policy")

func (refusedRecord) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return errRefused
}

func TestOutsideEnsureAheadRecordsBeforeTheCall(t *testing.T) {
	ctx := t.Context()
	p := newProfile(nil)

	t.Run("a record that cannot be written holds the call back", func(t *testing.T) {
		c := calls{}
		o := outside.New(refusedRecord{outsideClient(t)}, "iam", p, outside.Options{})
		called, err := o.EnsureAhead(ctx, "Test", "role/a", 1, c.fn("role/a", nil))
		if !errors.Is(err, errRefused) || called || len(c) != 0 {
			t.Errorf("EnsureAhead = %v, %v with calls %v; want the record's error and no call", called, err, c)
		}
	})

	t.Run("a piece whose call failed is recorded, and swept once the Profile stops naming it", func(t *testing.T) {
		server := outsideClient(t)
		o := outside.New(server, "iam", p, outside.Options{})
		outage := errors.New("IAM unavailable")
		if _, err := o.EnsureAhead(ctx, "Test", "role/a", 1, calls{}.fn("role/a", outage)); !errors.Is(err, outage) {
			t.Fatalf("EnsureAhead error = %v, want the call's", err)
		}
		// No Flush: the host stopped here.
		var removed []string
		err := outside.New(server, "iam", p, outside.Options{}).Sweep(ctx,
			func(k string) (string, bool) { return k, true },
			func(_ context.Context, piece string, _ []string) error { removed = append(removed, piece); return nil })
		if err != nil || !slices.Equal(removed, []string{"role/a"}) {
			t.Errorf("Sweep removed %v (err %v), want [role/a]", removed, err)
		}
	})

	t.Run("a piece recorded ahead is made on the next pass and then left alone", func(t *testing.T) {
		server := outsideClient(t)
		c := calls{}
		o := outside.New(server, "iam", p, outside.Options{})
		if _, err := o.EnsureAhead(ctx, "Test", "role/a", 1, c.fn("role/a", errors.New("IAM unavailable"))); err == nil {
			t.Fatal("EnsureAhead: want the call's error")
		}
		for range 2 {
			o := outside.New(server, "iam", p, outside.Options{})
			if _, err := o.EnsureAhead(ctx, "Test", "role/a", 1, c.fn("role/a", nil)); err != nil {
				t.Fatal(err)
			}
			if err := o.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if c["role/a"] != 2 {
			t.Errorf("calls = %v, want 2: the failed one and the one that made it", c)
		}
	})
}

// Intend may be the first thing a pass asks of its Outside (a revoke that
// records, failing closed, what a Profile being deleted names): it reads
// the record first and keeps what it holds.
func TestOutsideIntendAsTheFirstCall(t *testing.T) {
	ctx := t.Context()
	c := outsideClient(t)
	p := newProfile(nil)
	pass(t, outside.New(c, "iam", p, outside.Options{}), calls{}, map[string]any{"role/a": 1})
	if err := outside.New(c, "iam", p, outside.Options{}).Intend(ctx, "role/b"); err != nil {
		t.Fatal(err)
	}
	o := outside.New(c, "iam", p, outside.Options{})
	rec, err := o.Recorded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	made, err := o.Made(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"role/a", "role/b"}, {"role/a"}}, [][]string{rec, made}); diff != "" {
		t.Errorf("Recorded and Made after Intend (-want +got):\n%s", diff)
	}
}
