package volumes_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/volumes"
)

// releasedVolume makes a volume of ours that was released at releasedAt, the
// way the plugin leaves one: Retain, marked, its claim gone. reserved makes
// its claimRef name a returning claim, without a uid.
func releasedVolume(t *testing.T, name string, releasedAt time.Time, reserved bool) {
	t.Helper()
	releasedVolumeOf(t, name, "alice@example.org", releasedAt, reserved)
}

// releasedVolumeOf is releasedVolume for a volume of owner.
func releasedVolumeOf(t *testing.T, name, owner string, releasedAt time.Time, reserved bool) {
	t.Helper()
	ctx := t.Context()
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "gone-" + name, Name: "workspace", UID: types.UID("0000-" + name)}
	if reserved {
		ref.UID = ""
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: volumes.Kind, plugins.LabelProfile: "gone",
				volumes.LabelTemplate: "home", volumes.LabelOwner: volumes.OwnerHash(owner),
				volumes.LabelReleasedAt: strconv.FormatInt(releasedAt.Unix(), 10),
			},
			Annotations: map[string]string{volumes.AnnotationOwner: owner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      ref,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: fakeDriver, VolumeHandle: "handle-" + name,
			}},
		},
	}
	if err := env.Client.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pv) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	if reserved {
		return
	}
	// kube-controller-manager's binder finds the claim gone and releases it.
	waitVolume(t, name, 30*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Status.Phase == corev1.VolumeReleased, fmt.Sprintf("volume %s is %s", pv.Name, pv.Status.Phase)
	})
}

func only(names []string, ours []string) []string {
	var out []string
	for _, n := range names {
		if slices.Contains(ours, n) {
			out = append(out, n)
		}
	}
	return out
}

// TestSweepDeletesExpiredVolumes releases volumes at different times and
// sweeps with retainFor 1h: the dry run reports the expired ones and deletes
// nothing; the sweep deletes the oldest up to the cap and leaves the fresh
// one, the one reserved for a returning Profile, and the deferred one.
func TestSweepDeletesExpiredVolumes(t *testing.T) {
	ctx := t.Context()
	now := time.Now()
	id := rand.String(5)
	oldest, older, old := "sweep-oldest-"+id, "sweep-older-"+id, "sweep-old-"+id
	fresh, reserved := "sweep-fresh-"+id, "sweep-reserved-"+id
	releasedVolume(t, oldest, now.Add(-72*time.Hour), false)
	releasedVolume(t, older, now.Add(-48*time.Hour), false)
	releasedVolume(t, old, now.Add(-2*time.Hour), false)
	releasedVolume(t, fresh, now.Add(-10*time.Minute), false)
	// The reserved one's owner has a Profile again, whose claim it waits for.
	returning := "frank-" + id + "@example.org"
	releasedVolumeOf(t, reserved, returning, now.Add(-72*time.Hour), true)
	back := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "frank-" + id},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: returning}}}
	if err := env.Client.Create(ctx, back); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), back) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	ours := []string{oldest, older, old, fresh, reserved}

	cfg := volumes.NewConfig()
	cfg.RetainFor = metav1.Duration{Duration: time.Hour}
	cfg.MaxDeletesPerSweep = 2
	cfg.SweepInterval = metav1.Duration{Duration: 30 * time.Minute}
	cfg.SweepRecord.Name = "sweeps-" + id
	cfg.SweepDryRun = true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := volumes.Sweeper{Client: env.Client, Config: cfg, Now: func() time.Time { return now }, Namespace: "default"}

	rep, err := s.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dry run: expired %v, deleted %v", only(rep.Expired, ours), rep.Deleted)
	if diff := cmp.Diff([]string{oldest, older, old}, only(rep.Expired, ours)); diff != "" {
		t.Errorf("dry run's expired volumes (-want +got):\n%s", diff)
	}
	if len(rep.Deleted) != 0 || !rep.DryRun {
		t.Errorf("dry run deleted %v", rep.Deleted)
	}
	for _, n := range ours {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: n}, &corev1.PersistentVolume{}); err != nil {
			t.Errorf("volume %s after the dry run: %v", n, err)
		}
	}

	cfg.SweepDryRun = false
	rep, err = s.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sweep: expired %v, deleted %v, deferred %v", only(rep.Expired, ours), only(rep.Deleted, ours), only(rep.Deferred, ours))
	if diff := cmp.Diff([]string{oldest, older}, only(rep.Deleted, ours)); diff != "" {
		t.Errorf("deleted volumes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{old}, only(rep.Deferred, ours)); diff != "" {
		t.Errorf("deferred volumes (-want +got):\n%s", diff)
	}
	// kube-controller-manager's pv-protection controller lets a volume go
	// once nothing uses it.
	for _, n := range []string{oldest, older} {
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			err := env.Client.Get(ctx, client.ObjectKey{Name: n}, &corev1.PersistentVolume{})
			return apierrors.IsNotFound(err), fmt.Sprintf("expired volume %s still there: %v", n, err)
		})
	}
	for _, n := range []string{old, fresh, reserved} {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: n}, &corev1.PersistentVolume{}); err != nil {
			t.Errorf("volume %s deleted: %v", n, err)
		}
	}

	// A host that restarts sweeps at once: the new sweeper starts from the
	// record, not from zero, and deletes nothing more within the interval.
	restarted := volumes.Sweeper{Client: env.Client, Config: cfg, Now: func() time.Time { return now.Add(time.Minute) }, Namespace: "default"}
	rep, err = restarted.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(only(rep.Deleted, ours)) != 0 || !slices.Contains(rep.Deferred, old) {
		t.Errorf("a restarted sweeper within the interval deleted %v and deferred %v; want nothing deleted, %s deferred", only(rep.Deleted, ours), only(rep.Deferred, ours), old)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: old}, &corev1.PersistentVolume{}); err != nil {
		t.Errorf("volume %s after the restart's sweep: %v", old, err)
	}

	next := volumes.Sweeper{Client: env.Client, Config: cfg, Now: func() time.Time { return now.Add(cfg.SweepInterval.Duration) }, Namespace: "default"}
	rep, err = next.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{old}, only(rep.Deleted, ours)); diff != "" {
		t.Errorf("next interval's sweep deleted (-want +got):\n%s", diff)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: old}, &corev1.PersistentVolume{})
		return apierrors.IsNotFound(err), fmt.Sprintf("volume %s: %v", old, err)
	})
	if err := env.Client.Get(ctx, client.ObjectKey{Name: fresh}, &corev1.PersistentVolume{}); err != nil {
		t.Errorf("fresh volume %s: %v", fresh, err)
	}
}

// TestSweepLeavesTheVolumeOfAnOwnerWhoCameBack: an expired volume whose
// owner has a Profile again (made while the host was down, say, so that
// its pass has not taken the volume back yet) is not deleted: the sweep
// asks the API server whose Profiles exist. Once that Profile is gone too,
// the volume goes.
func TestSweepLeavesTheVolumeOfAnOwnerWhoCameBack(t *testing.T) {
	ctx := t.Context()
	id := rand.String(5)
	name, owner := "back-"+id, "carol-"+id+"@example.org"
	releasedVolumeOf(t, name, owner, time.Now().Add(-72*time.Hour), false)
	back := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "back-" + id},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: owner}}}
	if err := env.Client.Create(ctx, back); err != nil {
		t.Fatal(err)
	}
	s := sweeper(sweepConfig(id))
	rep, err := s.Sweep(ctx)
	if err != nil || slices.Contains(rep.Deleted, name) || !slices.Contains(rep.Spared, name) {
		t.Fatalf("Sweep with the owner's Profile back = deleted %v, spared %v, %v; want the volume spared", rep.Deleted, rep.Spared, err)
	}
	stillThere(t, name)

	if err := env.Client.Delete(ctx, back); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(back), &kubeflowv1.Profile{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Profile: %v", err)
	})
	rep, err = s.Sweep(ctx)
	if err != nil || !slices.Contains(rep.Deleted, name) {
		t.Errorf("Sweep once the owner's Profile is gone = deleted %v, %v; want the volume deleted", rep.Deleted, err)
	}
}

// TestSweepTakesBackAReservationNoProfileWaitsFor: a released volume still
// reserved for a claim (an earlier version's Revoke left the reservation
// when its Profile went before the claim bound) is taken back by the sweep
// once no Profile of its owner exists, so that no claim of that name in the
// next namespace of that name binds it; one whose owner has a Profile is
// left for that Profile's pass.
func TestSweepTakesBackAReservationNoProfileWaitsFor(t *testing.T) {
	ctx := t.Context()
	id := rand.String(5)
	left, waited := "left-"+id, "waited-"+id
	leftOwner, waitedOwner := "dave-"+id+"@example.org", "erin-"+id+"@example.org"
	releasedVolumeOf(t, left, leftOwner, time.Now().Add(-10*time.Minute), true)
	releasedVolumeOf(t, waited, waitedOwner, time.Now().Add(-10*time.Minute), true)
	back := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "erin-" + id},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: waitedOwner}}}
	if err := env.Client.Create(ctx, back); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), back) }) //nolint:forbidigo // cleanups run after t.Context is canceled

	rep, err := sweeper(sweepConfig(id)).Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{left}, only(rep.Unreserved, []string{left, waited})); diff != "" {
		t.Errorf("reservations taken back (-want +got):\n%s", diff)
	}
	var pv corev1.PersistentVolume
	if err := env.Client.Get(ctx, client.ObjectKey{Name: left}, &pv); err != nil {
		t.Fatal(err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != pv.UID {
		t.Errorf("the reservation left behind: claimRef %+v, want the volume's own uid %s", ref, pv.UID)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: waited}, &pv); err != nil {
		t.Fatal(err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != "" {
		t.Errorf("the reservation of an owner with a Profile was changed: claimRef %+v", ref)
	}
}

// TestSweepExpiresAtTheRetentionsEnd: a volume released exactly retainFor
// ago is past retention; one released a second later is not.
func TestSweepExpiresAtTheRetentionsEnd(t *testing.T) {
	id := rand.String(5)
	released := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	due, early := "due-"+id, "early-"+id
	releasedVolume(t, due, released, false)
	releasedVolume(t, early, released.Add(time.Second), false)
	cfg := sweepConfig(id)
	cfg.SweepDryRun = true
	s := sweeper(cfg)
	s.Now = func() time.Time { return released.Add(cfg.RetainFor.Duration) }
	rep, err := s.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{due}, only(rep.Expired, []string{due, early})); diff != "" {
		t.Errorf("expired at retainFor's end (-want +got):\n%s", diff)
	}
}

// TestSweepWithoutRetentionDeletesNothing: a host that sets no retainFor
// keeps released volumes for ever, however old their mark.
func TestSweepWithoutRetentionDeletesNothing(t *testing.T) {
	id := rand.String(5)
	name := "kept-" + id
	releasedVolume(t, name, time.Now().Add(-365*24*time.Hour), false)
	cfg := sweepConfig(id)
	cfg.RetainFor = metav1.Duration{}
	rep, err := sweeper(cfg).Sweep(t.Context())
	if err != nil || len(rep.Expired) != 0 || len(rep.Deleted) != 0 {
		t.Errorf("Sweep without retainFor = expired %v, deleted %v, %v; want nothing", rep.Expired, rep.Deleted, err)
	}
	stillThere(t, name)
}

// TestSweepHandsTheStorageToItsProvisioner: a swept volume is deleted with
// reclaim policy Delete, so that its provisioner deletes the storage behind
// it too; with Retain, the storage would be left behind, paid for, unseen.
func TestSweepHandsTheStorageToItsProvisioner(t *testing.T) {
	ctx := t.Context()
	id := rand.String(5)
	name := "provisioned-" + id
	releasedVolume(t, name, time.Now().Add(-72*time.Hour), false)
	// A finalizer of the test's holds the deleted volume, to be read.
	const hold = "test.profilekit.dev/hold"
	var pv corev1.PersistentVolume
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &pv); err != nil {
		t.Fatal(err)
	}
	pv.Finalizers = append(pv.Finalizers, hold)
	if err := env.Client.Update(ctx, &pv); err != nil {
		t.Fatal(err)
	}
	//nolint:forbidigo // cleanups run after t.Context is canceled
	t.Cleanup(func() {
		var pv corev1.PersistentVolume
		if env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &pv) == nil {
			pv.Finalizers = slices.DeleteFunc(pv.Finalizers, func(f string) bool { return f == hold })
			_ = env.Client.Update(context.Background(), &pv)
		}
	})
	rep, err := sweeper(sweepConfig(id)).Sweep(ctx)
	if err != nil || !slices.Contains(rep.Deleted, name) {
		t.Fatalf("Sweep = deleted %v, %v; want %s deleted", rep.Deleted, err, name)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &pv); err != nil {
		t.Fatal(err)
	}
	if pv.DeletionTimestamp.IsZero() || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("swept volume: deletion %v, reclaim policy %s; want deleted with %s", pv.DeletionTimestamp, pv.Spec.PersistentVolumeReclaimPolicy, corev1.PersistentVolumeReclaimDelete)
	}
}
