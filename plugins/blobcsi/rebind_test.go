package blobcsi_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

// waitClaimBound waits until claim ns/name is Bound to volume and returns it.
func waitClaimBound(t *testing.T, ns, name, volume string) corev1.PersistentVolumeClaim {
	t.Helper()
	var c corev1.PersistentVolumeClaim
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
			return false, err.Error()
		}
		return c.Status.Phase == corev1.ClaimBound && c.Spec.VolumeName == volume && c.DeletionTimestamp == nil,
			fmt.Sprintf("claim %s/%s is %s (volumeName %q)", ns, name, c.Status.Phase, c.Spec.VolumeName)
	})
	return c
}

// boundStandardClaim makes a Profile with the standard volume and returns
// its namespace, its volume's name and its claim once bound and True.
func boundStandardClaim(t *testing.T) (ns, volume string, claim corev1.PersistentVolumeClaim) {
	t.Helper()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	h := start(t, hostConfig(t, nil), reconcilers.WithResync(time.Hour))
	ns = unique("team-a")
	h.profile(t, ns, blobPlugin("standard"))
	volume = ns + ".standard"
	claim = waitClaimBound(t, ns, "standard", volume)
	testhost.WaitCondition(t, env.Client, ns, condType, plugins.ConditionTrue, "")
	return ns, volume, claim
}

// TestClaimDeletedByItsTenantBindsAgain: a tenant, with Kubeflow's rights in
// its namespace, deletes its own claim. The plugin makes it again and it
// binds to the same volume (the deleted claim's uid no longer holds the
// volume), and the condition says True only then.
func TestClaimDeletedByItsTenantBindsAgain(t *testing.T) {
	t.Parallel()
	a, volume, before := boundStandardClaim(t)

	tenant := testhost.Tenant(t, env, a)
	if err := tenant.Delete(t.Context(), &before); err != nil {
		t.Fatalf("the tenant deletes its claim: %v", err)
	}
	after := waitClaimBound(t, a, "standard", volume)
	if after.UID == before.UID {
		t.Fatalf("the claim was not deleted: uid %s", after.UID)
	}
	v, err := pv(t, volume)
	if err != nil {
		t.Fatal(err)
	}
	if v.Spec.ClaimRef == nil || v.Spec.ClaimRef.UID != after.UID || v.Status.Phase != corev1.VolumeBound {
		t.Errorf("volume %s: %s, claimRef %+v; want Bound to the new claim %s", volume, v.Status.Phase, v.Spec.ClaimRef, after.UID)
	}
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
}

// TestClaimMadeAgainByItsTenantBindsAgain: a tenant deletes its claim and
// makes it again from its manifest, labels and all, as a restore from a
// backup does, before the plugin has let the volume go (here: while the
// API server refuses the plugin's write to the volume). Once it may, the
// plugin lets the volume go to the claim made again, which binds; it is
// not left Pending beside a volume that stays Released.
func TestClaimMadeAgainByItsTenantBindsAgain(t *testing.T) {
	t.Parallel()
	a, volume, before := boundStandardClaim(t)

	probe := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: a + ".probe"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/probe"}},
		},
	}
	lift := testhost.Refuse(t, env.Client, "hold-"+a, "persistentvolumes", "!object.metadata.name.startsWith('"+a+".')", probe)

	tenant := testhost.Tenant(t, env, a)
	if err := tenant.Delete(t.Context(), &before); err != nil {
		t.Fatalf("the tenant deletes its claim: %v", err)
	}
	restored := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: before.Name, Labels: before.Labels},
		Spec:       before.Spec,
	}
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		err := tenant.Create(t.Context(), restored.DeepCopy())
		return err == nil, fmt.Sprintf("the tenant makes its claim again: %v", err)
	})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "hold-"+a)
	lift()

	after := waitClaimBound(t, a, "standard", volume)
	if after.UID == before.UID {
		t.Fatalf("the claim was not deleted: uid %s", after.UID)
	}
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
}

// TestVolumeBoundUnderTheEarlierNameKeepsIt: a volume that versions before
// the injective default name bound as <namespace>-<volume> keeps its name
// and its claim: a host with the new default does not replace it under
// its pods for a rename.
func TestVolumeBoundUnderTheEarlierNameKeepsIt(t *testing.T) {
	t.Parallel()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	a := unique("team-a")
	shard := newShard()
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin("standard"))
	earlier := a + "-standard"
	var before corev1.PersistentVolumeClaim
	t.Run("an earlier version", func(t *testing.T) {
		blobcsi.PlayEarlierVersion(t)
		startShard(t, shard, hostConfig(t, map[string]any{"names": map[string]any{"persistentVolume": "{{ .Namespace }}-{{ .Volume }}"}}), reconcilers.WithResync(time.Hour))
		before = waitClaimBound(t, a, "standard", earlier)
	})
	t.Run("this version", func(t *testing.T) {
		h := startShard(t, shard, hostConfig(t, nil), reconcilers.WithResync(300*time.Millisecond))
		h.host.ResyncWrites(t, 3, blobcsi.Kind)
		after := waitClaimBound(t, a, "standard", earlier)
		if after.UID != before.UID {
			t.Errorf("the claim was replaced: uid %s, was %s", after.UID, before.UID)
		}
		if _, err := pv(t, a+".standard"); !apierrors.IsNotFound(err) {
			t.Errorf("a volume of the new name was made beside the bound one: %v", err)
		}
		testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	})
}
