package volumes_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
	"github.com/profilekit/profilekit/plugins/volumes"
)

// The hostile suite of the sweeper, whose deletions reach user data across
// the cluster: what a foreign or garbled record, a volume that only looks
// like ours, and an API server that fails the delete can make it do. The
// crafted Profile name of another owner is TestRetained's (a volume of
// another owner never matches); a restart mid-window is
// TestSweepDeletesExpiredVolumes'.

func sweeper(cfg *volumes.Config) volumes.Sweeper {
	return volumes.Sweeper{Client: env.Client, Config: cfg, Namespace: "default"}
}

func sweepConfig(id string) *volumes.Config {
	cfg := volumes.NewConfig()
	cfg.RetainFor = metav1.Duration{Duration: time.Hour}
	cfg.SweepRecord.Name = "sweeps-" + id
	return cfg
}

func stillThere(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		var pv corev1.PersistentVolume
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: n}, &pv); err != nil || !pv.DeletionTimestamp.IsZero() {
			t.Errorf("volume %s was deleted (%v)", n, err)
		}
	}
}

// A ConfigMap of the record's name that is not the sweeper's, or a record
// that does not decode, holds every deletion: the cap cannot be counted.
func TestUnusableSweepRecordDeletesNothing(t *testing.T) {
	for _, tc := range []struct {
		reason string
		cm     corev1.ConfigMap
		want   string
	}{
		{"another's ConfigMap of the record's name", corev1.ConfigMap{Data: map[string]string{"actions.json": "[]"}}, plugins.ReasonConflict},
		{"a garbled record", corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: plugins.OwnershipLabels(volumes.Kind, "")}, Data: map[string]string{"actions.json": "{"}}, outside.ReasonLedger},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			id := rand.String(5)
			name := "hostile-" + id
			releasedVolume(t, name, time.Now().Add(-72*time.Hour), false)
			cfg := sweepConfig(id)
			cm := tc.cm
			cm.Namespace, cm.Name = "default", cfg.SweepRecord.Name
			if err := env.Client.Create(t.Context(), &cm); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), &cm) }) //nolint:forbidigo // cleanups run after t.Context is canceled
			rep, err := sweeper(cfg).Sweep(t.Context())
			if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != tc.want || len(rep.Deleted) != 0 {
				t.Errorf("Sweep = deleted %v, error %v; want nothing deleted and a terminal %s", rep.Deleted, err, tc.want)
			}
			stillThere(t, name)
			var after corev1.ConfigMap
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(&cm), &after); err != nil || after.ResourceVersion != cm.ResourceVersion {
				t.Errorf("the ConfigMap at the record's name was written (%v)", err)
			}
		})
	}
}

// Without a namespace for its record the sweeper cannot count, and deletes
// nothing.
func TestSweepWithoutRecordNamespaceDeletesNothing(t *testing.T) {
	id := rand.String(5)
	name := "hostile-nons-" + id
	releasedVolume(t, name, time.Now().Add(-72*time.Hour), false)
	s := sweeper(sweepConfig(id))
	s.Namespace = ""
	rep, err := s.Sweep(t.Context())
	if err == nil || len(rep.Deleted) != 0 {
		t.Errorf("Sweep = deleted %v, error %v; want nothing deleted and an error", rep.Deleted, err)
	}
	stillThere(t, name)
}

// A released volume that carries a release mark and profilekit's label, but
// another plugin's name, is not the sweeper's to delete.
func TestVolumeThatOnlyLooksOursIsNeverSwept(t *testing.T) {
	id := rand.String(5)
	name := "lookalike-" + id
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: "blobcsi", plugins.LabelProfile: "gone",
			volumes.LabelReleasedAt: strconv.FormatInt(time.Now().Add(-72*time.Hour).Unix(), 10),
		}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: fakeDriver, VolumeHandle: "handle-" + name}},
		},
	}
	if err := env.Client.Create(t.Context(), pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pv) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	rep, err := sweeper(sweepConfig(id)).Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range append(rep.Expired, rep.Deleted...) {
		if n == name {
			t.Errorf("the sweeper counted %s, another plugin's volume, as its own: %+v", name, rep)
		}
	}
	stillThere(t, name)
}

// An API server that fails the delete leaves the volume, reports the
// failure, and the next sweep within the window still keeps to the cap.
func TestFailedDeleteIsReportedAndCounted(t *testing.T) {
	id := rand.String(5)
	first, second := "faildel-a-"+id, "faildel-b-"+id
	releasedVolume(t, first, time.Now().Add(-72*time.Hour), false)
	releasedVolume(t, second, time.Now().Add(-71*time.Hour), false)
	cfg := sweepConfig(id)
	cfg.MaxDeletesPerSweep = 1
	rep, err := volumes.Sweeper{Client: failingDeletes{env.Client}, Reader: env.Client, Config: cfg, Namespace: "default"}.Sweep(t.Context())
	if err == nil || len(rep.Deleted) != 0 {
		t.Errorf("Sweep with failing deletes = deleted %v, error %v; want an error and nothing deleted", rep.Deleted, err)
	}
	stillThere(t, first, second)
	rep, err = sweeper(cfg).Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rep.Deleted {
		if n == first || n == second {
			t.Errorf("a second sweep in the window deleted %s: the failed attempt must count against the cap", n)
		}
	}
	stillThere(t, first, second)
}

// failingDeletes is a client whose deletes fail, as during an outage.
type failingDeletes struct{ client.Client }

func (failingDeletes) Delete(context.Context, client.Object, ...client.DeleteOption) error {
	return errors.New("the API server is down")
}

// staleList is a client whose lists of volumes answer what they answered
// before, as a cache that has not caught up does; every other call goes to
// the server.
type staleList struct {
	client.Client
	volumes corev1.PersistentVolumeList
}

func (s staleList) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if pvs, ok := list.(*corev1.PersistentVolumeList); ok {
		s.volumes.DeepCopyInto(pvs)
		return nil
	}
	return s.Client.List(ctx, list, opts...)
}

// A returning Profile takes an expired volume back (its claimRef names the
// new claim without a uid, the release mark goes) while the sweeper's list
// still shows it Released and marked: the sweeper must read it again and
// leave it, not delete the volume the returning claim is about to bind.
func TestVolumeTakenBackUnseenByTheListIsNotSwept(t *testing.T) {
	id := rand.String(5)
	name := "takenback-" + id
	releasedVolume(t, name, time.Now().Add(-72*time.Hour), false)
	var before corev1.PersistentVolumeList
	if err := env.Client.List(t.Context(), &before); err != nil {
		t.Fatal(err)
	}
	// What the plugin's reserve does when the Profile comes back.
	takeBack := []byte(`{"metadata":{"labels":{"` + volumes.LabelReleasedAt + `":null}},` +
		`"spec":{"claimRef":{"namespace":"back-` + id + `","name":"workspace","uid":null,"resourceVersion":null}}}`)
	pv := &corev1.PersistentVolume{}
	pv.Name = name
	if err := env.Client.Patch(t.Context(), pv, client.RawPatch(types.MergePatchType, takeBack)); err != nil {
		t.Fatal(err)
	}

	cfg := sweepConfig(id)
	rep, err := volumes.Sweeper{Client: staleList{Client: env.Client, volumes: before}, Reader: env.Client, Config: cfg, Namespace: "default"}.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(rep.Deleted, name) || !slices.Contains(rep.Spared, name) {
		t.Errorf("sweep of a volume taken back since the list: deleted %v, spared %v; want it spared", rep.Deleted, rep.Spared)
	}
	stillThere(t, name)
	var live corev1.PersistentVolume
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &live); err != nil {
		t.Fatal(err)
	}
	if live.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("the taken-back volume's reclaim policy is %s, want it Retain as the Profile left it", live.Spec.PersistentVolumeReclaimPolicy)
	}
}

// The sweeper's write of the reclaim policy must not take away what the
// plugin applied: with the plugin's field manager and only that field, the
// server would drop the plugin's labels and annotations, and a volume whose
// delete then failed would be left without the marks by which a returning
// Profile, or the next sweep, finds it.
func TestFailedSweepLeavesThePluginsMarks(t *testing.T) {
	id := rand.String(5)
	name := "marks-" + id
	released := time.Now().Add(-72 * time.Hour)
	releasedVolume(t, name, released, false)
	var pv corev1.PersistentVolume
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &pv); err != nil {
		t.Fatal(err)
	}
	gone := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "gone"}, Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: "User", Name: "alice@example.org"}}}
	state := volumes.State(volumes.Kind, gone, volumes.Template{Name: "home"}, corev1.PersistentVolumeReclaimRetain, time.Time{}).Released(&pv, released)
	// As on a provisioner's volume, the plugin's field manager alone holds
	// its labels and annotations: the test's create gives them up first.
	unmark := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":null,"annotations":null}}`))
	if err := env.Client.Patch(t.Context(), &pv, unmark); err != nil {
		t.Fatal(err)
	}
	if err := apply.Fields(t.Context(), env.Client, volumes.Kind, pv.UID, state.Apply(name)); err != nil {
		t.Fatal(err)
	}

	cfg := sweepConfig(id)
	rep, err := volumes.Sweeper{Client: failingDeletes{env.Client}, Reader: env.Client, Config: cfg, Namespace: "default"}.Sweep(t.Context())
	if err == nil || slices.Contains(rep.Deleted, name) {
		t.Fatalf("Sweep with failing deletes = deleted %v, error %v; want an error and nothing deleted", rep.Deleted, err)
	}
	stillThere(t, name)
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &pv); err != nil {
		t.Fatal(err)
	}
	for k, v := range state.Labels {
		if pv.Labels[k] != v {
			t.Errorf("label %s after the failed sweep = %q, want %q", k, pv.Labels[k], v)
		}
	}
	for k, v := range state.Annotations {
		if pv.Annotations[k] != v {
			t.Errorf("annotation %s after the failed sweep = %q, want %q", k, pv.Annotations[k], v)
		}
	}
}

// Two Profiles of one owner, with match: Owner, find one retained volume.
// The first takes it (its claimRef names the first's claim); the second's
// pass, from a list that has not seen that yet, must not take it from the
// first: the claimRef patch carries the resourceVersion it read.
func TestVolumeTakenByAnotherProfileUnseenByTheListIsNotRetaken(t *testing.T) {
	ctx := t.Context()
	id := rand.String(5)
	name := "retaken-" + id
	releasedVolume(t, name, time.Now().Add(-time.Hour), false)
	var before corev1.PersistentVolumeList
	if err := env.Client.List(ctx, &before); err != nil {
		t.Fatal(err)
	}
	first := "first-" + id
	takeBy := []byte(`{"spec":{"claimRef":{"namespace":"` + first + `","name":"workspace","uid":null,"resourceVersion":null}}}`)
	pv := &corev1.PersistentVolume{}
	pv.Name = name
	if err := env.Client.Patch(ctx, pv, client.RawPatch(types.MergePatchType, takeBy)); err != nil {
		t.Fatal(err)
	}

	def := volumes.Definition()
	second := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "second-" + id, UID: types.UID("uid-second-" + id)},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: "User", Name: "alice@example.org"}},
	}
	cfg, err := def.Decode([]byte(`{"templates":[{"name":"home","claimName":"workspace","size":"1Gi"}],"volumes":[{"template":"home"}],"match":"Owner"}`), second)
	if err != nil {
		t.Fatal(err)
	}
	c := staleList{Client: env.Client, volumes: before}
	objects := apply.New(c, def.Kind(), second, def.Owns, apply.OptionsFor(def)...)
	res, err := def.Plugin.Apply(ctx, plugins.Request{Profile: second, Config: cfg, Client: c, Objects: objects})
	t.Logf("second Profile's pass: %s, %v", res.Summary(), err)

	var live corev1.PersistentVolume
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &live); err != nil {
		t.Fatal(err)
	}
	if ref := live.Spec.ClaimRef; ref == nil || ref.Namespace != first {
		t.Errorf("the volume the first Profile took now has claimRef %+v; want it still %s/workspace", ref, first)
	}
	if live.Labels[plugins.LabelProfile] == second.Name {
		t.Errorf("the volume the first Profile took is labelled for %s", second.Name)
	}
}
