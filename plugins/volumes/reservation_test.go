package volumes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/volumes"
)

// TestReservationDoesNotOutliveItsProfile: an owner's Profile comes back,
// the plugin reserves her retained volume for its claim, and the Profile
// goes again before the claim was ever made (here: refused). The next
// Profile of the name, of another owner, then makes a claim of that name:
// it must not be bound to her volume. Revoke takes the reservation back, so
// Kubernetes' binder keeps the volume released.
func TestReservationDoesNotOutliveItsProfile(t *testing.T) {
	run := "reserve-" + rand.String(4)
	name := "reserve-" + rand.String(5)
	startHost(t, run, hostConfig(storageClass(t, true)))
	first := newProfile(t, name, run, "alice@example.org", nil)
	pv := provision(t, name, "workspace")
	waitBound(t, name, "workspace")
	waitVolume(t, pv.Name, 20*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain, string(pv.Spec.PersistentVolumeReclaimPolicy)
	})
	deleteProfile(t, first)
	waitVolume(t, pv.Name, 30*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Status.Phase == corev1.VolumeReleased, string(pv.Status.Phase)
	})

	// Her claim cannot be made when she comes back.
	probe := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe-" + rand.String(6)},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	lift := testhost.Refuse(t, env.Client, "refuse-claim-"+name, "persistentvolumeclaims",
		fmt.Sprintf("!((object.metadata.namespace == '%s' && object.metadata.name == 'workspace') || object.metadata.name == '%s')", name, probe.Name),
		probe, admissionregistrationv1.Create)
	again := newProfile(t, name, run, "alice@example.org", nil)
	waitVolume(t, pv.Name, 30*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		ref := pv.Spec.ClaimRef
		return ref != nil && ref.Namespace == name && ref.Name == "workspace" && ref.UID == "", fmt.Sprintf("claimRef %+v", ref)
	})
	deleteProfile(t, again)
	lift()
	// Taken back from the claim, the volume is released again for the
	// retention's clock.
	if got := waitVolume(t, pv.Name, time.Second, func(*corev1.PersistentVolume) (bool, string) { return true, "" }); got.Labels[volumes.LabelReleasedAt] == "" {
		t.Errorf("the volume taken back from her claim has no release mark: labels %v, claimRef %+v", got.Labels, got.Spec.ClaimRef)
	}

	// The next Profile of the name, of another owner, is refused: the name
	// is held for her. Handed over by an administrator, it makes a claim of
	// that name, which must not be bound to her volume.
	newProfile(t, name, run, "bob@example.org", nil)
	testhost.WaitTenureConflict(t, env.Client, name, condType)
	testhost.ReleaseName(t, env.Client, name)
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Annotations = map[string]string{plugins.AnnotationReverify: "released"}
	})
	var claim corev1.PersistentVolumeClaim
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "workspace"}, &claim)
		return err == nil, fmt.Sprintf("the next owner's claim: %v", err)
	})
	time.Sleep(5 * time.Second) // the binder's turn
	got := waitVolume(t, pv.Name, time.Second, func(*corev1.PersistentVolume) (bool, string) { return true, "" })
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(&claim), &claim); err != nil {
		t.Fatal(err)
	}
	if claim.Spec.VolumeName == pv.Name || got.Status.Phase == corev1.VolumeBound {
		t.Errorf("the next owner's claim (volumeName %q, %s) was given her volume %s (%s, claimRef %+v)",
			claim.Spec.VolumeName, claim.Status.Phase, pv.Name, got.Status.Phase, got.Spec.ClaimRef)
	}
	t.Logf("her volume after the next owner's claim: %s, claimRef uid %q; the claim: %s", got.Status.Phase, got.Spec.ClaimRef.UID, claim.Status.Phase)
}

// TestClaimDeletedByItsTenantGetsItsVolumeBack: a tenant, with Kubeflow's
// rights in its namespace, deletes its own bound claim. The volume is
// retained, the plugin makes the claim again, and it binds the same volume:
// the data stays the tenant's.
func TestClaimDeletedByItsTenantGetsItsVolumeBack(t *testing.T) {
	run := "tenant-" + rand.String(4)
	name := "tenant-" + rand.String(5)
	startHost(t, run, hostConfig(storageClass(t, true)))
	newProfile(t, name, run, "alice@example.org", nil)
	pv := provision(t, name, "workspace")
	before, _ := waitBound(t, name, "workspace")
	waitVolume(t, pv.Name, 20*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain, string(pv.Spec.PersistentVolumeReclaimPolicy)
	})
	tenant := testhost.Tenant(t, env, name)
	if err := tenant.Delete(t.Context(), before); err != nil {
		t.Fatalf("the tenant deletes its claim: %v", err)
	}
	testhost.Eventually(t, 60*time.Second, func() (bool, string) {
		var c corev1.PersistentVolumeClaim
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "workspace"}, &c); err != nil {
			return false, err.Error()
		}
		return c.UID != before.UID && c.Status.Phase == corev1.ClaimBound && c.Spec.VolumeName == pv.Name,
			fmt.Sprintf("claim %s (uid %s, volume %q)", c.Status.Phase, c.UID, c.Spec.VolumeName)
	})
}

// TestNextOwnerCannotClaimTheVolumeByName: the next owner of a deleted
// Profile's name, with Kubeflow's rights in the namespace, makes the claim
// the plugin would make herself, before the plugin does, naming the
// retained volume of the name's earlier owner (spec.volumeName). Neither
// the binder nor the plugin gives it to her: the volume keeps the earlier
// Profile's claimRef and stays released, and her claim stays unbound,
// before and after an administrator hands the name over, when the plugin
// reports the claim as a conflict it leaves alone.
func TestNextOwnerCannotClaimTheVolumeByName(t *testing.T) {
	run := "byname-" + rand.String(4)
	name := "byname-" + rand.String(5)
	startHost(t, run, hostConfig(storageClass(t, true)))
	first := newProfile(t, name, run, "alice@example.org", nil)
	pv := provision(t, name, "workspace")
	waitBound(t, name, "workspace")
	waitVolume(t, pv.Name, 20*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain, string(pv.Spec.PersistentVolumeReclaimPolicy)
	})
	deleteProfile(t, first)
	released := waitVolume(t, pv.Name, 30*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Status.Phase == corev1.VolumeReleased, string(pv.Status.Phase)
	})

	newProfile(t, name, run, "mallory@example.org", nil)
	testhost.WaitTenureConflict(t, env.Client, name, condType)
	mallory := testhost.Tenant(t, env, name)
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "workspace"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      released.Spec.AccessModes,
			StorageClassName: &released.Spec.StorageClassName,
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: released.Spec.Capacity},
		},
	}
	if err := mallory.Create(t.Context(), claim); err != nil {
		t.Fatalf("the next owner makes her claim: %v", err)
	}
	check := func(when string) {
		t.Helper()
		time.Sleep(5 * time.Second) // the binder's turn
		got := waitVolume(t, pv.Name, time.Second, func(*corev1.PersistentVolume) (bool, string) { return true, "" })
		var c corev1.PersistentVolumeClaim
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(claim), &c); err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == corev1.VolumeBound || c.Status.Phase == corev1.ClaimBound ||
			got.Spec.ClaimRef == nil || got.Spec.ClaimRef.UID == c.UID {
			t.Errorf("%s: her claim (%s) was given the earlier owner's volume %s (%s, claimRef %+v)", when, c.Status.Phase, pv.Name, got.Status.Phase, got.Spec.ClaimRef)
		}
		t.Logf("%s: the earlier owner's volume %s, claimRef uid %q; her claim %s", when, got.Status.Phase, got.Spec.ClaimRef.UID, c.Status.Phase)
	}
	check("while the name is held")

	testhost.ReleaseName(t, env.Client, name)
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Annotations = map[string]string{plugins.AnnotationReverify: "released"}
	})
	// The claim of that name is hers, not the plugin's: it is left
	// untouched and said so.
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "Conflict")
	check("once the name is hers")
}

// TestReservationIsKeptUntilTheClaimBinds: the plugin gives an owner's
// retained volume back by reserving it for her claim; until the binder
// binds them (here held back, its status writes too), the volume still
// shows Released. Pass after
// pass the reservation stays, and nothing is written: taking it back would
// leave her claim waiting for a volume no longer meant for it. Once the
// binder may write again, the claim binds to her volume.
func TestReservationIsKeptUntilTheClaimBinds(t *testing.T) {
	ctx := t.Context()
	run, name := "held-"+rand.String(4), "held-"+rand.String(5)
	sc := storageClass(t, false)
	host := startHost(t, run, hostConfig(sc))
	pv := retained(name, sc)
	if err := env.Client.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pv) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	if err := settled(ctx, env.Client, pv.Name); err != nil {
		t.Fatal(err)
	}
	probe := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "hold-probe-" + rand.String(6)}, Spec: pv.Spec}
	lift := testhost.Refuse(t, env.Client, "hold-"+name, "persistentvolumes,persistentvolumes/status",
		fmt.Sprintf("!object.metadata.name.startsWith('hold-probe-') && (object.metadata.name != '%s' || request.userInfo.username != 'system:kube-controller-manager')", pv.Name),
		probe)

	newProfile(t, name, run, scenarioOwner, nil)
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		var c corev1.PersistentVolumeClaim
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: "workspace"}, &c)
		return err == nil && c.Spec.VolumeName == pv.Name, fmt.Sprintf("claim workspace: volumeName %q, %v", c.Spec.VolumeName, err)
	})
	writes := host.ResyncWrites(t, 3, volumes.Kind)
	held := waitVolume(t, pv.Name, time.Second, func(*corev1.PersistentVolume) (bool, string) { return true, "" })
	if ref := held.Spec.ClaimRef; len(writes) != 0 || ref == nil || ref.UID != "" || ref.Namespace != name || ref.Name != "workspace" {
		t.Errorf("while the binding is held back: %d writes %v; the volume (%s) has claimRef %+v, want reserved for %s/workspace",
			len(writes), writes, held.Status.Phase, ref, name)
	}
	t.Logf("binding held back: volume %s %s, %d writes in 3 passes", held.Name, held.Status.Phase, len(writes))

	lift()
	pvc, bound := waitBound(t, name, "workspace")
	if bound.Name != pv.Name {
		t.Errorf("her claim bound to %s, want her retained volume %s", bound.Name, pv.Name)
	}
	t.Logf("binding let go: claim %s/%s bound to %s", name, pvc.Name, bound.Name)
}
