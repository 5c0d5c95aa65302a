package volumes_test

import (
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
