package outside_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
)

// calls counts the outside calls a test makes, by key.
type calls map[string]int

func (c calls) fn(key string, err error) func(context.Context) error {
	return func(context.Context) error {
		c[key]++
		return err
	}
}

func outsideClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithReturnManagedFields().Build()
}

// recordOf is where plugin kind's record of newProfile's Profile lives.
func recordOf(kind string) client.ObjectKey {
	return client.ObjectKey{Namespace: outside.DefaultRecordsNamespace, Name: outside.RecordName(kind, "u1")}
}

func newProfile(annotations map[string]string) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "u1", Annotations: annotations}}
}

// pass runs one pass the way a host does: Ensure for every desired piece,
// then Flush.
func pass(t *testing.T, o *outside.Outside, c calls, desired map[string]any) {
	t.Helper()
	ctx := context.Background()
	for key, want := range desired {
		if _, err := o.Ensure(ctx, "Test", key, want, c.fn(key, nil)); err != nil {
			t.Fatalf("Ensure %s: %v", key, err)
		}
	}
	if err := o.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func TestOutsideCallsOnlyWhatChanged(t *testing.T) {
	c := outsideClient(t)
	p := newProfile(nil)
	got := calls{}
	desired := map[string]any{"container/a": map[string]string{"name": "a"}, "container/b": map[string]string{"name": "b"}}

	pass(t, outside.New(c, "blob", p, outside.Options{}), got, desired)
	pass(t, outside.New(c, "blob", p, outside.Options{}), got, desired)
	if diff := cmp.Diff(calls{"container/a": 1, "container/b": 1}, got); diff != "" {
		t.Errorf("after a first and an unchanged second pass, calls (-want +got):\n%s", diff)
	}

	desired["container/b"] = map[string]string{"name": "b", "tier": "cool"}
	pass(t, outside.New(c, "blob", p, outside.Options{}), got, desired)
	if diff := cmp.Diff(calls{"container/a": 1, "container/b": 2}, got); diff != "" {
		t.Errorf("after b changed, calls (-want +got):\n%s", diff)
	}

	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), recordOf("blob"), &cm); err != nil {
		t.Fatalf("record: %v", err)
	}
	if !plugins.IsOwnedBy(cm.Labels, "blob", "team") || cm.Labels[plugins.LabelRole] != plugins.RoleOutsideState {
		t.Errorf("record labels = %v, want ours with the outside-state role", cm.Labels)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != "u1" {
		t.Errorf("record owner references = %v, want the Profile", cm.OwnerReferences)
	}
}

func TestOutsideReverify(t *testing.T) {
	c := outsideClient(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	opts := outside.Options{Reverify: 6 * time.Hour}
	desired := map[string]any{"role": "r"}
	got := calls{}

	pass(t, outside.New(c, "db", newProfile(nil), opts, outside.WithClock(clock)), got, desired)
	now = now.Add(6 * time.Hour) // within the 10% stretch at the earliest
	pass(t, outside.New(c, "db", newProfile(nil), opts, outside.WithClock(clock)), got, desired)
	if got["role"] != 1 {
		t.Errorf("calls at the period's end = %d, want 1 (the period is stretched, never shortened)", got["role"])
	}
	now = now.Add(37 * time.Minute) // past any stretch of up to 10%
	pass(t, outside.New(c, "db", newProfile(nil), opts, outside.WithClock(clock)), got, desired)
	if got["role"] != 2 {
		t.Errorf("calls past the stretched period = %d, want 2", got["role"])
	}

	// The manual trigger calls again at once, and once only per value.
	trigger := map[string]string{plugins.AnnotationReverify: "now"}
	pass(t, outside.New(c, "db", newProfile(trigger), opts, outside.WithClock(clock)), got, desired)
	pass(t, outside.New(c, "db", newProfile(trigger), opts, outside.WithClock(clock)), got, desired)
	if got["role"] != 3 {
		t.Errorf("calls after the trigger twice = %d, want 3", got["role"])
	}
}

func TestOutsideFailures(t *testing.T) {
	ctx := context.Background()
	c := outsideClient(t)
	p := newProfile(nil)

	o := outside.New(c, "blob", p, outside.Options{})
	called, err := o.Ensure(ctx, "AzureBlob", "container/a", "a", func(context.Context) error { return errors.New("connection refused") })
	var oe *outside.Error
	if !called || !errors.As(err, &oe) || plugins.ReasonOf(err, "") != "AzureBlobError" || plugins.IsTerminal(err) {
		t.Errorf("failed call: called %v, error %v (reason %q); want a retried AzureBlobError", called, err, plugins.ReasonOf(err, ""))
	}
	if err := o.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := outside.New(c, "blob", p, outside.Options{}).Recorded(ctx)
	if err != nil || len(keys) != 0 {
		t.Errorf("record after a failed call = %v, %v; want nothing recorded", keys, err)
	}

	o = outside.New(c, "blob", p, outside.Options{Timeout: 20 * time.Millisecond})
	_, err = o.Ensure(ctx, "AzureBlob", "container/a", "a", func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.As(err, &oe) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow call: error %v, want an AzureBlobError that wraps the deadline", err)
	}

	bad := plugins.Terminalf(plugins.ReasonInvalidSpec, "no such account")
	_, err = o.Ensure(ctx, "AzureBlob", "container/a", "a", func(context.Context) error { return bad })
	if !plugins.IsTerminal(err) || errors.As(err, &oe) {
		t.Errorf("terminal failure: error %v, want the TerminalError as it is", err)
	}
}

func TestOutsideForgetDeletesAnEmptyRecord(t *testing.T) {
	ctx := context.Background()
	c := outsideClient(t)
	p := newProfile(nil)
	got := calls{}
	pass(t, outside.New(c, "db", p, outside.Options{}), got, map[string]any{"role": 1, "database": 2})

	o := outside.New(c, "db", p, outside.Options{})
	keys, err := o.Recorded(ctx)
	if diff := cmp.Diff([]string{"database", "role"}, keys); err != nil || diff != "" {
		t.Fatalf("Recorded = %v, %v; (-want +got):\n%s", keys, err, diff)
	}
	if err := o.Forget(ctx, "role"); err != nil {
		t.Fatal(err)
	}
	if err := o.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, _ := outside.New(c, "db", p, outside.Options{}).Recorded(ctx); !cmp.Equal(keys, []string{"database"}) {
		t.Errorf("Recorded after forgetting role = %v, want [database]", keys)
	}

	o = outside.New(c, "db", p, outside.Options{})
	if err := o.Forget(ctx, "database"); err != nil {
		t.Fatal(err)
	}
	if err := o.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	err = c.Get(ctx, recordOf("db"), &cm)
	if err == nil {
		t.Errorf("record still there after everything was forgotten: %v", cm.Data)
	}
}

// A record of the same name that is not ours is never used or overwritten.
func TestOutsideRefusesAForeignRecord(t *testing.T) {
	ctx := context.Background()
	c := outsideClient(t)
	key := recordOf("db")
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: map[string]string{"x": "y"}}
	if err := c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	got := calls{}
	_, err := outside.New(c, "db", newProfile(nil), outside.Options{}).Ensure(ctx, "PostgreSQL", "role", 1, got.fn("role", nil))
	if plugins.ReasonOf(err, "") != plugins.ReasonConflict || got["role"] != 0 {
		t.Errorf("Ensure beside a foreign record: error %v, %d calls; want a Conflict and no call", err, got["role"])
	}
}

func TestOfflineOutsideCallsNothing(t *testing.T) {
	ctx := context.Background()
	o := outside.NewOffline("blob", newProfile(nil))
	got := calls{}
	if called, err := o.Ensure(ctx, "AzureBlob", "container/a", "a", got.fn("a", nil)); called || err != nil {
		t.Errorf("offline Ensure = %v, %v; want nothing called", called, err)
	}
	if err := o.Call(ctx, "OPA", got.fn("grants", nil)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("offline calls = %v, want none", got)
	}
	if diff := cmp.Diff([]string{"AzureBlob container/a", "OPA"}, o.Skipped()); diff != "" {
		t.Errorf("Skipped (-want +got):\n%s", diff)
	}
}

// The Applier never prunes the outside-state record, even for a plugin that
// owns ConfigMaps.
func TestSyncKeepsTheOutsideRecord(t *testing.T) {
	ctx := context.Background()
	c := outsideClient(t)
	p := newProfile(nil)
	pass(t, outside.New(c, "settings", p, outside.Options{}), calls{}, map[string]any{"k": 1})
	owns := []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")}
	res, err := apply.New(c, "settings", p, owns).Sync(ctx, corev1ac.ConfigMap("other", "team"))
	if err != nil || res.Count(plugins.Deleted) != 0 {
		t.Errorf("Sync = %s, %v; want the record kept", res.Summary(), err)
	}
}

func TestOutsideSweepForgetsOnlyWhatItRemoved(t *testing.T) {
	ctx := context.Background()
	c := outsideClient(t)
	p := newProfile(nil)
	pass(t, outside.New(c, "iam", p, outside.Options{}), calls{},
		map[string]any{"role/a": 1, "role/b/x": 2, "role/b/y": 3, "role/c": 4, "role/kept": 5, "other": 6})

	o := outside.New(c, "iam", p, outside.Options{})
	outage := errors.New("IAM unavailable")
	got := map[string][]string{}
	var order []string
	err := o.Sweep(ctx, func(k string) (string, bool) {
		rest, ok := strings.CutPrefix(k, "role/")
		piece, _, _ := strings.Cut(rest, "/")
		return piece, ok && piece != "kept"
	}, func(_ context.Context, piece string, keys []string) error {
		got[piece] = keys
		order = append(order, piece)
		if piece == "c" {
			return outage
		}
		return nil
	})
	if !errors.Is(err, outage) {
		t.Errorf("Sweep error = %v, want the failed removal's", err)
	}
	want := map[string][]string{"a": {"role/a"}, "b": {"role/b/x", "role/b/y"}, "c": {"role/c"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pieces removed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, order); diff != "" {
		t.Errorf("order of removal (-want +got):\n%s", diff)
	}
	if err := o.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := outside.New(c, "iam", p, outside.Options{}).Recorded(ctx)
	// The failed piece stays for the next pass; what the Profile still names
	// and what is not the sweep's are never touched.
	if diff := cmp.Diff([]string{"other", "role/c", "role/kept"}, keys); err != nil || diff != "" {
		t.Errorf("Recorded after the sweep = %v, %v; (-want +got):\n%s", keys, err, diff)
	}
}

// TestOutsideRecordLivesOutOfTheTenantsReach: the record is in the host's
// namespace, named by the Profile's UID. A copy in the Profile's own
// namespace, where the tenant can write (even one written under the
// plugin's field manager, which any client may send), is never read:
// nothing it names is swept, and what the Profile names is made true.
func TestOutsideRecordLivesOutOfTheTenantsReach(t *testing.T) {
	ctx := context.Background()
	c := outsideClient(t)
	p := newProfile(nil)
	made := calls{}
	pass(t, outside.New(c, "iam", p, outside.Options{}), made, map[string]any{"role/a": 1})
	var cm corev1.ConfigMap
	if err := c.Get(ctx, recordOf("iam"), &cm); err != nil {
		t.Fatalf("record in the host's namespace: %v", err)
	}
	if !plugins.IsOwnedBy(cm.Labels, "iam", "team") || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != p.UID {
		t.Errorf("record labels %v, owners %v; want ours, owned by the Profile", cm.Labels, cm.OwnerReferences)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "team", Name: outside.StateName("iam")}, &corev1.ConfigMap{}); err == nil {
		t.Error("a record was written into the Profile's namespace")
	}

	// The tenant writes a record of the old name and form, crafted to name a
	// piece the plugin never made for it, under the plugin's field manager.
	labels := plugins.OwnershipLabels("iam", "team")
	labels[plugins.LabelRole] = plugins.RoleOutsideState
	forged := corev1ac.ConfigMap(outside.StateName("iam"), "team").WithLabels(labels).
		WithData(map[string]string{"state.json": `{"role/a":{"hash":"x"},"role/victim":{"hash":"y"}}`})
	if err := c.Apply(ctx, forged, client.FieldOwner(plugins.FieldManagerFor("iam")), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	var removed []string
	o := outside.New(c, "iam", p, outside.Options{})
	err := o.Sweep(ctx, func(k string) (string, bool) { return k, k != "role/a" },
		func(_ context.Context, piece string, _ []string) error { removed = append(removed, piece); return nil })
	if err != nil || len(removed) != 0 {
		t.Errorf("Sweep beside a forged copy removed %v (err %v), want nothing", removed, err)
	}
	pass(t, o, made, map[string]any{"role/a": 1})
	if diff := cmp.Diff(calls{"role/a": 1}, made); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestOutsideRecordIsKeyedByTheProfilesUID: a Profile made again under a
// deleted one's name starts from no record; nothing the last one was given
// passes to it as made.
func TestOutsideRecordIsKeyedByTheProfilesUID(t *testing.T) {
	ctx := context.Background()
	c := outsideClient(t)
	first := newProfile(nil)
	made := calls{}
	pass(t, outside.New(c, "iam", first, outside.Options{}), made, map[string]any{"role/a": 1})

	next := newProfile(nil)
	next.UID = "u2"
	o := outside.New(c, "iam", next, outside.Options{})
	if keys, err := o.Recorded(ctx); err != nil || len(keys) != 0 {
		t.Errorf("the next Profile of the name: Recorded = %v, %v; want nothing", keys, err)
	}
	pass(t, o, made, map[string]any{"role/a": 1})
	if diff := cmp.Diff(calls{"role/a": 2}, made); diff != "" {
		t.Errorf("the next Profile of the name is not given the first one's state (-want +got):\n%s", diff)
	}
	noUID := newProfile(nil)
	noUID.UID = ""
	if _, err := outside.New(c, "iam", noUID, outside.Options{}).Recorded(ctx); err == nil {
		t.Error("a Profile without a UID: want an error, not a record shared by name")
	}
}

// recordBehind is a cache that answers reads of the outside-state record
// with the copy it held when behind was set, as an informer that has not
// yet shown the latest writes does; everything else goes to the server.
type recordBehind struct {
	client.Client
	held *corev1.ConfigMap
}

func (r recordBehind) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if cm, ok := obj.(*corev1.ConfigMap); ok && r.held != nil && key.Name == r.held.Name {
		r.held.DeepCopyInto(cm)
		return nil
	}
	return r.Client.Get(ctx, key, obj, opts...)
}

// TestOutsideRemovedPieceIsMadeAgainWhileTheCacheIsBehind: a piece removed
// by one pass and named again by the next, whose cache still shows the
// record from before the removal, is made true again. Trusting that copy
// would skip the call and leave the piece missing (a trust statement, a
// grant) while every record says it is there, until the next resync.
func TestOutsideRemovedPieceIsMadeAgainWhileTheCacheIsBehind(t *testing.T) {
	ctx := context.Background()
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
	behind := recordBehind{Client: server, held: &before}
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
	o = outside.New(recordBehind{Client: server, held: &now}, "iam", p, outside.Options{},
		outside.WithLiveReader(live), outside.WithRecords(records))
	pass(t, o, settled, map[string]any{"role/a": 1, "role/b": 2})
	if len(settled) != 0 || live.n != 0 {
		t.Errorf("a pass over a cache that shows the last write: calls %v, reads from the API server %d; want none", settled, live.n)
	}
}

// countingReader counts reads.
type countingReader struct {
	client.Reader
	n int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.n++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// refusedRecord is a client whose writes of ConfigMaps are refused.
type refusedRecord struct{ client.Client }

var errRefused = errors.New("refused by an admission policy")

func (refusedRecord) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return errRefused
}

func TestOutsideEnsureAheadRecordsBeforeTheCall(t *testing.T) {
	ctx := context.Background()
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
	ctx := context.Background()
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
