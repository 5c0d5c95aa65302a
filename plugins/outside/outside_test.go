package outside_test

import (
	"context"
	"errors"
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
	ctx := t.Context()
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
	if err := c.Get(t.Context(), recordOf("blob"), &cm); err != nil {
		t.Fatalf("record: %v", err)
	}
	if !plugins.IsOwnedBy(cm.Labels, "blob", "team") || cm.Labels[plugins.LabelRole] != plugins.RoleOutsideState {
		t.Errorf("record labels = %v, want ours with the outside-state role", cm.Labels)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != "u1" {
		t.Errorf("record owner references = %v, want the Profile", cm.OwnerReferences)
	}
}

func TestOutsideFailures(t *testing.T) {
	ctx := t.Context()
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
	ctx := t.Context()
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
	ctx := t.Context()
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
	ctx := t.Context()
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
	ctx := t.Context()
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
	ctx := t.Context()
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
	ctx := t.Context()
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
	ctx := t.Context()
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
