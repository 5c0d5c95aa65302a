package blobcsi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

// heldProfiles waits until exactly n of the Profiles report
// VolumeDeletesHeld, and returns their conditions' messages.
func heldProfiles(t *testing.T, n int, names ...string) []string {
	t.Helper()
	var msgs []string
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		msgs = nil
		for _, name := range names {
			var p kubeflowv1.Profile
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			if c := plugins.FindCondition(p.Status.Conditions, condType); c != nil && strings.Contains(c.Message, blobcsi.ReasonVolumeDeletesHeld) {
				msgs = append(msgs, c.Message)
			}
		}
		return len(msgs) == n, fmt.Sprintf("%d Profiles held, want %d: %v", len(msgs), n, msgs)
	})
	return msgs
}

// TestForeignDeleteRecordHoldsEveryDeletion: a ConfigMap that is not the
// plugin's at the deletion record's name is a Conflict; it is left as it is
// and no volume is deleted, since nothing can be counted.
func TestForeignDeleteRecordHoldsEveryDeletion(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	putGrants(t, sharedDoc([]string{a}, "census-1", "census-2"))
	record := unique("deletes")
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: systemNS, Name: record}, Data: map[string]string{"owner": "someone-else"}}
	if err := env.Client.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	_ = json.Unmarshal(hostConfig(t, nil), &cfg)
	cfg["deleteRecord"] = map[string]any{"name": record}
	raw, _ := json.Marshal(cfg)
	h := start(t, raw, reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	want := sharedVolumes(a, "census-1", "census-2")
	waitVolumes(t, a, want, time.Minute)
	putGrants(t, sharedDoc([]string{a}, "census-1"))
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, plugins.ReasonConflict)
	if !strings.Contains(cond.Message, systemNS+"/"+record) {
		t.Errorf("condition %q does not name the ConfigMap", cond.Message)
	}
	keptFor(t, 2*time.Second, a, want)
	var got corev1.ConfigMap
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(foreign), &got); err != nil || !cmp.Equal(got.Data, foreign.Data) || len(got.Labels) != 0 {
		t.Errorf("foreign ConfigMap after the pass: %v, data %v, labels %v; want it untouched", err, got.Data, got.Labels)
	}
}

// TestForgedClaimsDoNotHoldBackGrants: a tenant that makes claims with the
// plugin's labels and a grants source's name in its own namespace must not
// make the first document after a restart look like a withdrawal of most
// grants in use, which would hold back every tenant's grants: the drop
// guard counts the PersistentVolumes the plugin made, which a tenant cannot
// make, and only those bound to the very claim that exists, not to an
// earlier one of the same name.
func TestForgedClaimsDoNotHoldBackGrants(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	two := []string{"census-1", "census-2"}
	putGrants(t, sharedDoc([]string{a}, two...))
	source := serversOf(t).source
	shard := newShard()
	cfg := hostConfig(t, nil)
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	want := sharedVolumes(a, two...)
	t.Run("first run", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		waitVolumes(t, a, want, time.Minute)
	})
	// While the host is down the tenant forges ten claims: with them the
	// unchanged document would withdraw 10 of 12 grants. Their names are
	// those of ten earlier claims of the plugin whose volumes were kept
	// (Released, reclaim policy Retain): a volume bound to a claim names its
	// UID, and the forged claims have others.
	ours := map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: blobcsi.Kind, blobcsi.LabelSource: source}
	for i := range 10 {
		kept := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-kept-%d", a, i), Labels: ours},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/kept"}},
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: a, Name: fmt.Sprintf("forged-%d", i), UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))},
			},
		}
		if err := env.Client.Create(t.Context(), kept); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), kept) }) //nolint:forbidigo // cleanups run after t.Context is canceled
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("forged-%d", i), Namespace: a, Labels: ours},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if err := env.Client.Create(t.Context(), pvc); err != nil {
			t.Fatal(err)
		}
	}
	taken := refreshes(t, source, "OK")
	startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		ok, refused := refreshes(t, source, "OK")-taken, refreshes(t, source, "DropTooLarge")
		return ok > 0 && refused == 0, fmt.Sprintf("after the restart %v documents taken, %v refused as too large a drop", ok, refused)
	})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	// The granted volumes stay; the forged claims, which the plugin did not
	// make, are left alone, unbound.
	for i := range 10 {
		want[fmt.Sprintf("forged-%d", i)] = "<gone>"
	}
	if got := volumesOf(t, a); !cmp.Equal(want, got) {
		t.Errorf("the tenant's claims after the restart (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// TestVolumeTakenOverUnseenByTheCacheIsNotDeleted: a withdrawn volume's
// PersistentVolume that someone took over (relabelled, to keep it) a moment
// before the pass, as the pass's cache does not show yet, is left: the
// delete carries the version the pass decided on, and a volume changed
// since is deleted only if it is still ours.
func TestVolumeTakenOverUnseenByTheCacheIsNotDeleted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a := unique("team-a")
	putGrants(t, sharedDoc([]string{a}, "census-1", "census-2"))
	h := start(t, hostConfig(t, map[string]any{"maxVolumeDeletes": 100}), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	waitVolumes(t, a, sharedVolumes(a, "census-1", "census-2"), time.Minute)

	h.applies.holdVolumes(t)
	var taken *corev1.PersistentVolume
	// kube-controller-manager may still be writing the volume's status.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if taken, err = pv(t, a+".census-1"); err != nil {
			return err
		}
		taken.Labels[plugins.LabelManagedBy] = "someone-else"
		return env.Client.Update(ctx, taken)
	})
	if err != nil {
		t.Fatal(err)
	}

	putGrants(t, sharedDoc([]string{a}, "census-2"))
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		_, has := claims(t, a)["census-1"]
		return !has, "the withdrawn claim census-1 is still there"
	})
	time.Sleep(time.Second) // passes retried meanwhile
	now, err := pv(t, taken.Name)
	switch {
	case err != nil:
		t.Errorf("the volume someone took over is gone: %v; want it left", err)
	case now.UID != taken.UID || now.DeletionTimestamp != nil:
		t.Errorf("the volume someone took over: uid %s (was %s), deletion %v; want it left", now.UID, taken.UID, now.DeletionTimestamp)
	default:
		// Let it go, so that no later test meets it.
		if err := env.Client.Delete(ctx, now); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	if v, err := pv(t, a+".census-2"); err != nil || v.DeletionTimestamp != nil {
		t.Errorf("the granted volume census-2: %v; want it kept", err)
	}
}

// TestClaimsWithOurLabelsAreTheTenants: a tenant, with Kubeflow's rights in
// its namespace, who puts every label of ours (its Profile's and a grants
// source's among them) on claims of its own gets none of them deleted,
// neither as stale nor when the plugin is taken off, and uses up none of
// the cluster-wide allowance of volume deletions, which would then hold
// every other tenant's: only a claim that a PersistentVolume of ours names
// is the plugin's. A withdrawn grant's volume goes all the same, counted
// once, and the revoke ends with the tenant's claims left.
func TestClaimsWithOurLabelsAreTheTenants(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	putGrants(t, sharedDoc([]string{a}, "census-1", "census-2"))
	// Three volume deletions per hour: census-1's withdrawal, then the
	// revoke's two (standard and census-2).
	cfg := hostConfigWithDrop(t, map[string]any{"maxVolumeDeletes": 3, "deleteWindow": "1h"}, 1)
	h := start(t, cfg, reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	want := sharedVolumes(a, "census-1", "census-2")
	waitVolumes(t, a, want, time.Minute)

	tenant := testhost.Tenant(t, env, a)
	labels := plugins.OwnershipLabels(blobcsi.Kind, a)
	labels[blobcsi.LabelSource] = serversOf(t).source
	forged := []string{"mine-1", "mine-2", "mine-3"}
	for _, name := range forged {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a, Labels: labels},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if err := tenant.Create(t.Context(), pvc); err != nil {
			t.Fatalf("the tenant makes claim %s: %v", name, err)
		}
		want[name] = "<gone>" // unbound
	}

	// Deleting the tenant's three claims besides the withdrawn volume would
	// be four deletions, over the allowance of three: every one held.
	putGrants(t, sharedDoc([]string{a}, "census-2"))
	delete(want, "census-1")
	waitVolumes(t, a, want, time.Minute)
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	keptFor(t, 2*time.Second, a, want)
	if got := len(deletesRecorded(t, cfg)); got != 1 {
		t.Errorf("the deletion record counts %d deletions, want 1 (census-1's)", got)
	}

	takeOff(t, a)
	left := map[string]string{}
	for _, name := range forged {
		left[name] = "<gone>"
	}
	if got := volumesOf(t, a); !cmp.Equal(left, got) {
		t.Errorf("claims after the revoke (-want +got):\n%s", cmp.Diff(left, got))
	}
	if got := len(deletesRecorded(t, cfg)); got != 3 {
		t.Errorf("the deletion record counts %d deletions after the revoke, want 3 (census-1's, then standard's and census-2's)", got)
	}
}

// TestRevokeWithAForgedClaimFailsClosed: the plugin is taken off a Profile
// whose tenant forged a claim with our labels while the API server does
// not answer the reads that prove which claims are ours: the revoke fails,
// with the reason, and deletes nothing, neither our volumes nor the
// tenant's claim, and the finalizer stays. Once the reads work, the revoke
// ends and the tenant's claim is left.
func TestRevokeWithAForgedClaimFailsClosed(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	putGrants(t, sharedDoc([]string{a}, "census-1"))
	h := start(t, hostConfig(t, map[string]any{"maxVolumeDeletes": 100}), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	want := sharedVolumes(a, "census-1")
	waitVolumes(t, a, want, time.Minute)
	forgeClaim(t, a, "mine")
	want["mine"] = "<gone>" // unbound

	h.applies.failClaims.Store(true)
	testhost.UpdateProfile(t, env.Client, a, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, errClaimRead.Error())
	keptFor(t, 2*time.Second, a, want)
	var p kubeflowv1.Profile
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: a}, &p); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Finalizers, "profilekit.dev/blobcsi") {
		t.Errorf("finalizers %v while the revoke cannot prove what is ours, want the plugin's kept", p.Finalizers)
	}

	h.applies.failClaims.Store(false)
	// The failed revokes are retried with a growing delay, by now maybe
	// beyond takeOff's wait; a change of the Profile retries it at once.
	testhost.UpdateProfile(t, env.Client, a, func(p *kubeflowv1.Profile) {
		p.Annotations = map[string]string{plugins.AnnotationReverify: "reads-work"}
	})
	takeOff(t, a)
	if got := volumesOf(t, a); !cmp.Equal(map[string]string{"mine": "<gone>"}, got) {
		t.Errorf("claims after the revoke: %v, want the tenant's alone", got)
	}
}

// forgeClaim makes, as the tenant of namespace ns with Kubeflow's rights, a
// ReadWriteOnce claim of name with the plugin's ownership labels.
func forgeClaim(t *testing.T, ns, name string) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: plugins.OwnershipLabels(blobcsi.Kind, ns)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := testhost.Tenant(t, env, ns).Create(t.Context(), pvc); err != nil {
		t.Fatalf("the tenant makes claim %s: %v", name, err)
	}
}
