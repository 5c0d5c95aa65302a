package outside_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// legacyRecord writes a record the way earlier versions did: a ConfigMap
// of the plugin's in the Profile's namespace, applied under its field
// manager and owned by the Profile, holding pieces made at some time.
func legacyRecord(t *testing.T, c client.Client, kind string, p *kubeflowv1.Profile, keys ...string) {
	t.Helper()
	entries := map[string]map[string]any{}
	for _, k := range keys {
		entries[k] = map[string]any{"hash": "0123456789abcdef01234567", "at": time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	}
	data, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	labels := plugins.OwnershipLabels(kind, p.Name)
	labels[plugins.LabelRole] = plugins.RoleOutsideState
	cm := corev1ac.ConfigMap(outside.StateName(kind), plugins.Namespace(p)).WithLabels(labels).
		WithOwnerReferences(plugins.OwnerReference(p)).WithData(map[string]string{"state.json": string(data)})
	if err := c.Apply(t.Context(), cm, client.FieldOwner(plugins.FieldManagerFor(kind)), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}

func migrateClient(t *testing.T, profiles ...*kubeflowv1.Profile) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := kubeflowv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	objs := make([]client.Object, len(profiles))
	for i, p := range profiles {
		objs[i] = p
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithReturnManagedFields().Build()
}

// TestMigrateRecordsMovesWhatEarlierVersionsWrote: the records today's
// hosts find in the Profiles' namespaces are moved into the host's, keyed
// by UID, as intended and not made (the tenant could have written them),
// and the copies are deleted; once done, no copy is read again.
func TestMigrateRecordsMovesWhatEarlierVersionsWrote(t *testing.T) {
	ctx := t.Context()
	team := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "u1"}}
	other := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "other", UID: "u2"}}
	c := migrateClient(t, team, other)
	legacyRecord(t, c, "iam", team, "role/a", "role/b")
	legacyRecord(t, c, "blob", team, "container/x")
	legacyRecord(t, c, "iam", &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "gone", UID: "u9"}}, "role/g")
	// The host already made role/a for team under the new scheme.
	pass(t, outside.New(c, "iam", team, outside.Options{}), calls{}, map[string]any{"role/a": 1})
	// other's namespace holds a copy that claims to be team's.
	forged := corev1ac.ConfigMap(outside.StateName("iam"), "other").
		WithLabels(map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: "iam", plugins.LabelProfile: "team", plugins.LabelRole: plugins.RoleOutsideState}).
		WithData(map[string]string{"state.json": `{"role/stolen":{"hash":"x"}}`})
	if err := c.Apply(ctx, forged, client.FieldOwner("tenant"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}

	moved, err := outside.MigrateRecords(ctx, c, c, "")
	if err != nil || moved != 2 {
		t.Fatalf("MigrateRecords = %d, %v; want 2 records moved", moved, err)
	}
	var done corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: outside.DefaultRecordsNamespace, Name: outside.RecordsMigratedName}, &done); err != nil ||
		done.Labels[plugins.LabelRole] != outside.RoleMigrated {
		t.Errorf("the mark of a finished move in the default records' namespace: %v, labels %v", err, done.Labels)
	}
	type state struct{ Recorded, Made []string }
	read := func(kind string) state {
		o := outside.New(c, kind, team, outside.Options{})
		rec, err := o.Recorded(ctx)
		if err != nil {
			t.Fatal(err)
		}
		made, err := o.Made(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return state{rec, made}
	}
	want := map[string]state{
		"iam":  {Recorded: []string{"role/a", "role/b"}, Made: []string{"role/a"}},
		"blob": {Recorded: []string{"container/x"}},
	}
	for kind, w := range want {
		if diff := cmp.Diff(w, read(kind)); diff != "" {
			t.Errorf("%s's record after the move (-want +got):\n%s", kind, diff)
		}
	}
	// Every copy goes, also those of a Profile that is gone and those in a
	// namespace not their Profile's, which are not moved.
	for _, key := range []client.ObjectKey{
		{Namespace: "team", Name: outside.StateName("iam")}, {Namespace: "team", Name: outside.StateName("blob")},
		{Namespace: "gone", Name: outside.StateName("iam")}, {Namespace: "other", Name: outside.StateName("iam")},
	} {
		if err := c.Get(ctx, key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("copy %s: %v; want it deleted", key, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: outside.DefaultRecordsNamespace, Name: outside.RecordName("iam", "u2")}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("other's record: %v; want none, nothing was moved for it", err)
	}

	// A copy written after the move is never read.
	legacyRecord(t, c, "vault", team, "engine/late")
	if moved, err := outside.MigrateRecords(ctx, c, c, ""); err != nil || moved != 0 {
		t.Errorf("a second MigrateRecords = %d, %v; want nothing moved", moved, err)
	}
	if keys, err := outside.New(c, "vault", team, outside.Options{}).Recorded(ctx); err != nil || len(keys) != 0 {
		t.Errorf("vault's record = %v, %v; want nothing from a copy written after the move", keys, err)
	}
}
