package blobcsi_test

// This file holds the tests of what goes and what is kept: a withdrawn grant
// and an immutable change while a pod mounts the claim, retention on revoke,
// and the cap on volume deletions.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

// mountingPod creates a pod in ns that mounts claim, bound to a node (none
// runs here, so it stays Pending), which is what a running notebook looks
// like to the pvc-protection controller.
func mountingPod(t *testing.T, ns, name, claim string) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if err := env.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: "node-a",
			Containers: []corev1.Container{{Name: "nb", Image: "notebook",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// ledByInUse fails t unless cond's message is led by the reason
// VolumeInUse, once: the reason the docs name, which a platform's alert
// or a user's eye looks for first.
func ledByInUse(t *testing.T, cond kubeflowv1.ProfileCondition) {
	t.Helper()
	lead := blobcsi.ReasonVolumeInUse + ": "
	if !strings.HasPrefix(cond.Message, lead) || strings.Contains(cond.Message, lead+lead) {
		t.Errorf("condition %q: want it led by %q, once", cond.Message, lead)
	}
}

func TestWithdrawnGrantWithMountingPod(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	doc := grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a}, "others": {"someone-else"}},
		Buckets: map[string]map[string]any{
			"census-shared": {"classification": "unclassified", "readers": []string{"census"}, "spn": "sp"},
			"other-bucket":  {"classification": "unclassified", "readers": []string{"others"}, "spn": "sp"},
		},
	}
	putGrants(t, doc)
	h := start(t, hostConfig(t, map[string]any{"maxVolumeDeletes": 100}), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadOnlyMany"})
	pod := mountingPod(t, a, "notebook-0", "census-shared")

	doc.Buckets["census-shared"]["readers"] = []string{"others"}
	putGrants(t, doc)
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, blobcsi.ReasonVolumeInUse)
	if !strings.Contains(cond.Message, "notebook-0") {
		t.Errorf("condition %q does not name the pod", cond.Message)
	}
	ledByInUse(t, cond)
	t.Logf("condition: %s", cond.Message)

	c := claims(t, a)["census-shared"]
	if c.DeletionTimestamp == nil || !slices.Contains(c.Finalizers, "kubernetes.io/pvc-protection") {
		t.Errorf("claim = deletion %v, finalizers %v; want deleted and held by kubernetes.io/pvc-protection", c.DeletionTimestamp, c.Finalizers)
	}
	var got corev1.Pod
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), &got); err != nil || got.DeletionTimestamp != nil || got.UID != pod.UID {
		t.Errorf("pod after the grant was withdrawn: %v, deletion %v; want it untouched", err, got.DeletionTimestamp)
	}
	// The PV waits for its claim.
	if v, err := pv(t, a+".census-shared"); err != nil || v.DeletionTimestamp != nil {
		t.Errorf("PV: %v, deletion %v; want it kept while its claim is held", err, v.DeletionTimestamp)
	}
	// A few seconds later the pod is still there and the claim still held.
	time.Sleep(2 * time.Second)
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), &got); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("pod: %v, deletion %v; want it untouched", err, got.DeletionTimestamp)
	}

	// The user stops the notebook: the claim and then the PV go, and the
	// condition clears.
	if err := env.Client.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 60*time.Second, func() (bool, string) {
		_, cerr := claims(t, a)["census-shared"]
		_, perr := pv(t, a+".census-shared")
		return !cerr && apierrors.IsNotFound(perr), fmt.Sprintf("claim present %v, PV: %v", cerr, perr)
	})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
}

// TestVolumeNoPodMountsGoesWithoutInUse: a volume taken off a Profile
// that no pod mounts goes, claim then PV, and the plugin never says it is
// twoVolumes converges a Profile with the volumes standard and
// standard-ro, on a host that may delete 100 volumes at once, and returns
// its name.
func twoVolumes(t *testing.T) string {
	t.Helper()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	h := start(t, hostConfig(t, map[string]any{"maxVolumeDeletes": 100}), reconcilers.WithResync(time.Hour))
	a := unique("team-a")
	h.profile(t, a, blobPlugin("standard", "standard-ro"))
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "standard-ro": "ReadOnlyMany"})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	return a
}

// in use: no VolumeInUse condition, no Warning Event on the way.
func TestVolumeNoPodMountsGoesWithoutInUse(t *testing.T) {
	t.Parallel()
	a := twoVolumes(t)

	testhost.UpdateProfile(t, env.Client, a, func(p *kubeflowv1.Profile) { p.Spec.Plugins = []kubeflowv1.Plugin{blobPlugin("standard")} })
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		_, claimed := claims(t, a)["standard-ro"]
		_, err := pv(t, a+".standard-ro")
		return !claimed && apierrors.IsNotFound(err), fmt.Sprintf("claim present %v, PV: %v", claimed, err)
	})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	// Events are sent a moment after they are recorded.
	time.Sleep(time.Second)
	for _, e := range testhost.Events(t, env.Client, a) {
		if strings.Contains(e, " "+blobcsi.ReasonVolumeInUse+" ") {
			t.Errorf("a volume no pod mounts was said to be in use: %s", e)
		}
	}
}

// TestRefusedDeleteIsNotTakenForDone: a delete of a removed volume's
// claim or volume that the API server refuses (an admission policy here)
// fails the pass with the refusal and reports nothing deleted; the claim
// and the volume go once it may, claim first.
func TestRefusedDeleteIsNotTakenForDone(t *testing.T) {
	t.Parallel()
	a := twoVolumes(t)

	liftClaims := testhost.RefuseDeletes(t, env.Client, "keep-claims-"+a, "persistentvolumeclaims",
		"oldObject.metadata.namespace != '"+a+"'", claimProbe(a))
	volumeProbe := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: a + ".probe"},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:       "probe-volume-" + a,
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/probe"}},
		},
	}
	liftVolumes := testhost.RefuseDeletes(t, env.Client, "keep-volumes-"+a, "persistentvolumes",
		"!oldObject.metadata.name.startsWith('"+a+".')", volumeProbe)

	testhost.UpdateProfile(t, env.Client, a, func(p *kubeflowv1.Profile) { p.Spec.Plugins = []kubeflowv1.Plugin{blobPlugin("standard")} })
	kept := func(what string) {
		t.Helper()
		if c, ok := claims(t, a)["standard-ro"]; what == "claim" && (!ok || c.DeletionTimestamp != nil) {
			t.Fatalf("the claim whose delete is refused is gone or going (present %v)", ok)
		}
		if v, err := pv(t, a+".standard-ro"); err != nil || v.DeletionTimestamp != nil {
			t.Fatalf("the volume whose delete is refused is gone or going: %v", err)
		}
	}
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "keep-claims-"+a)
	t.Logf("while the claim's delete is refused: %s", cond.Message)
	time.Sleep(time.Second) // passes are retried meanwhile
	kept("claim")

	liftClaims()
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		_, claimed := claims(t, a)["standard-ro"]
		return !claimed, "the claim is still there"
	})
	cond = testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "keep-volumes-"+a)
	t.Logf("while the volume's delete is refused: %s", cond.Message)
	time.Sleep(time.Second)
	kept("volume")

	liftVolumes()
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		_, err := pv(t, a+".standard-ro")
		return apierrors.IsNotFound(err), fmt.Sprintf("PV: %v", err)
	})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	if _, err := pv(t, a+".standard"); err != nil {
		t.Errorf("the volume the Profile keeps: %v", err)
	}
}

// TestDeleteOfAChangedObjectReadsItAgain: a delete made from a read that
// is behind (the object changed since) conflicts; the object is read again
// and deleted when it is still ours, and left when someone took it over.
func TestDeleteOfAChangedObjectReadsItAgain(t *testing.T) {
	t.Parallel()
	ours := map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: blobcsi.Kind}
	for _, tc := range []struct {
		name   string
		change func(*corev1.ConfigMap)
		gone   bool
	}{
		{"still ours", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"changed": "yes"} }, true},
		{"taken over", func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"owner": "someone"} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: unique("conflict"), Namespace: metav1.NamespaceDefault, Labels: ours}}
			if err := env.Client.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			behind := cm.DeepCopy()
			tc.change(cm)
			if err := env.Client.Update(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			if err := blobcsi.DeleteOwned(t.Context(), env.Client, env.Client, behind); err != nil {
				t.Fatalf("a delete that conflicted: %v", err)
			}
			err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
			if gone := apierrors.IsNotFound(err); gone != tc.gone {
				t.Fatalf("gone %v, want %v (read: %v)", gone, tc.gone, err)
			}
			if !tc.gone {
				_ = env.Client.Delete(t.Context(), cm)
			}
		})
	}
}

// TestReplacedVolumeWithoutItsClaimCountsAgainstTheCap: a volume that
// must be replaced after its claim is gone is a deletion the cluster-wide
// allowance counts like any other: with the allowance spent, it is held.
func TestReplacedVolumeWithoutItsClaimCountsAgainstTheCap(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	doc := censusDoc(a, "census-shared", "census-other")
	putGrants(t, doc)
	// One volume deletion per hour across the cluster.
	h := start(t, hostConfig(t, map[string]any{"maxVolumeDeletes": 1, "deleteWindow": "1h"}), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadOnlyMany", "census-other": "ReadOnlyMany"})

	// The withdrawn bucket spends the allowance.
	delete(doc.Buckets, "census-other")
	putGrants(t, doc)
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		_, err := pv(t, a+".census-other")
		return apierrors.IsNotFound(err), fmt.Sprintf("the withdrawn volume: %v", err)
	})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	before, err := pv(t, a+".census-shared")
	if err != nil {
		t.Fatal(err)
	}

	// The tenant deletes its claim, which the plugin may not make again
	// (an admission policy refuses), and then the volume must change.
	testhost.Refuse(t, env.Client, "no-claims-"+a, "persistentvolumeclaims", "object.metadata.namespace != '"+a+"'", claimProbe(a),
		admissionregistrationv1.Create)
	tenant := testhost.Tenant(t, env, a)
	shared := claims(t, a)["census-shared"]
	if err := tenant.Delete(t.Context(), &shared); err != nil {
		t.Fatalf("the tenant deletes its claim: %v", err)
	}
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		_, ok := claims(t, a)["census-shared"]
		return !ok, "the claim is still there"
	})
	becomeWriter(t, doc)
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, blobcsi.ReasonVolumeDeletesHeld)
	t.Logf("the allowance spent: %s", cond.Message)
	time.Sleep(2 * time.Second) // passes are retried meanwhile
	if now, err := pv(t, a+".census-shared"); err != nil || now.UID != before.UID || now.DeletionTimestamp != nil {
		t.Fatalf("the volume past the allowance was deleted: %v", err)
	}
}

// TestClaimBesideAGoingVolumeIsReplacedWhenItMustChange: a claim whose
// access mode must change is replaced even when its volume cannot say so,
// being deleted (by an administrator here, held by its claim): the pair
// is made again, not left waiting for a claim nothing deletes.
func TestClaimBesideAGoingVolumeIsReplacedWhenItMustChange(t *testing.T) {
	t.Parallel()
	_, a, doc := censusReader(t)
	volume, err := pv(t, a+".census-shared")
	if err != nil {
		t.Fatal(err)
	}
	old := claims(t, a)["census-shared"].UID
	if err := env.Client.Delete(t.Context(), volume); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		v, err := pv(t, a+".census-shared")
		return err == nil && v.DeletionTimestamp != nil, fmt.Sprintf("the volume: %v, held by its claim", err)
	})
	becomeWriter(t, doc)
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		c, ok := claims(t, a)["census-shared"]
		return ok && c.UID != old && c.DeletionTimestamp == nil && c.Spec.AccessModes[0] == corev1.ReadWriteMany,
			fmt.Sprintf("claim present %v uid %s modes %v", ok, c.UID, c.Spec.AccessModes)
	})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
}

// TestImmutableChangeWithTheClaimUnseenLeavesTheMountedVolume: a pass
// whose cache has not seen the claim (a cache behind, or a restart) still
// does not replace a volume that pods mount through that claim: the
// volume's own binding names the claim.
func TestImmutableChangeWithTheClaimUnseenLeavesTheMountedVolume(t *testing.T) {
	t.Parallel()
	h, a, doc := censusReader(t)
	before, err := pv(t, a+".census-shared")
	if err != nil {
		t.Fatal(err)
	}
	pod := mountingPod(t, a, "notebook-0", "census-shared")

	h.applies.hideClaims()
	becomeWriter(t, doc)
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "is replaced when pods notebook-0 no longer mount it")
	ledByInUse(t, cond)
	t.Logf("while mounted, the claim unseen: %s", cond.Message)
	keep := func() {
		t.Helper()
		now, err := pv(t, a+".census-shared")
		if err != nil || now.UID != before.UID || now.DeletionTimestamp != nil {
			t.Fatalf("the mounted volume was touched: %v, uid %s (was %s), deletion %v", err, now.UID, before.UID, now.DeletionTimestamp)
		}
		if c := claims(t, a)["census-shared"]; c.DeletionTimestamp != nil {
			t.Fatalf("the mounted claim is being deleted: %v", c.DeletionTimestamp)
		}
	}
	keep()
	time.Sleep(2 * time.Second) // passes are retried meanwhile
	keep()

	// The cache catches up and the user stops the notebook: the pair is
	// replaced, claim first.
	h.applies.seeClaims()
	replacedOnceStopped(t, a, pod, "")
}

// TestTenantClaimOfTheNewNameLeavesTheMountedVolume: the host renames the
// claims (names.claim) while a pod mounts a volume through its claim of the
// old name, and the tenant has made a claim of the new name with the
// plugin's labels and another access mode. The pass must replace that pair;
// the volume it would replace is bound to the old claim, whose pods count:
// the volume is left while they mount it.
func TestTenantClaimOfTheNewNameLeavesTheMountedVolume(t *testing.T) {
	t.Parallel()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	a := unique("team-a")
	shard := newShard()
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin("standard"))
	t.Run("served", func(t *testing.T) {
		startShard(t, shard, hostConfig(t, nil), reconcilers.WithResync(time.Hour))
		waitClaims(t, a, map[string]string{"standard": "ReadWriteMany"})
	})
	before, err := pv(t, a+".standard")
	if err != nil || before.Spec.ClaimRef == nil || before.Spec.ClaimRef.Name != "standard" {
		t.Fatalf("volume %s.standard: %v, want it bound to claim standard", a, err)
	}
	mountingPod(t, a, "notebook-0", "standard")
	forgeClaim(t, a, "standard-data")

	renamed := hostConfig(t, map[string]any{"names": map[string]any{"claim": "{{ .Volume }}-data"}})
	startShard(t, shard, renamed, reconcilers.WithResync(time.Hour))
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "is replaced when pods notebook-0 no longer mount it")
	ledByInUse(t, cond)
	t.Logf("renamed while mounted: %s", cond.Message)
	for range 2 {
		now, err := pv(t, a+".standard")
		if err != nil || now.UID != before.UID || now.DeletionTimestamp != nil {
			t.Fatalf("the mounted volume was touched: %v, uid %s (was %s), deletion %v", err, now.UID, before.UID, now.DeletionTimestamp)
		}
		time.Sleep(time.Second) // passes are retried meanwhile
	}
}

func TestImmutableChangeReplacesThePairWhenUnmounted(t *testing.T) {
	t.Parallel()
	_, a, doc := censusReader(t)
	old := claims(t, a)["census-shared"]
	pod := mountingPod(t, a, "notebook-0", "census-shared")

	// The reader becomes a writer: the access mode of a claim cannot change.
	becomeWriter(t, doc)
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "is replaced when pods notebook-0 no longer mount it")
	ledByInUse(t, cond)
	t.Logf("while mounted: %s", cond.Message)
	if c := claims(t, a)["census-shared"]; c.UID != old.UID || c.DeletionTimestamp != nil {
		t.Errorf("the mounted claim was touched: uid %s (was %s), deletion %v", c.UID, old.UID, c.DeletionTimestamp)
	}

	replacedOnceStopped(t, a, pod, old.UID)
}

// censusReader serves a new Profile whose team reads the bucket
// census-shared, and waits for its claims; it returns the grants document.
func censusReader(t *testing.T) (*harness, string, grantsDoc) {
	t.Helper()
	a := unique("team-a")
	doc := censusDoc(a, "census-shared")
	putGrants(t, doc)
	h := start(t, hostConfig(t, nil), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadOnlyMany"})
	return h, a, doc
}

// censusDoc is a grants document whose team census, of Profile a alone,
// reads each of buckets.
func censusDoc(a string, buckets ...string) grantsDoc {
	doc := grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a}},
		Buckets:         map[string]map[string]any{},
	}
	for _, b := range buckets {
		doc.Buckets[b] = map[string]any{"classification": "unclassified", "readers": []string{"census"}, "spn": "sp"}
	}
	return doc
}

// claimProbe is a claim in namespace ns that no volume binds, for an
// admission policy on the namespace's claims to be proven with.
func claimProbe(ns string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("probe-" + ns),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// becomeWriter makes the census team a writer of census-shared: the access
// mode of its claim cannot change, so the pair must be replaced.
func becomeWriter(t *testing.T, doc grantsDoc) {
	t.Helper()
	doc.Buckets["census-shared"]["writers"] = []string{"census"}
	putGrants(t, doc)
}

// replacedOnceStopped stops the notebook pod and waits until census-shared's
// claim is a writer's (another claim than old, when given) and the
// condition is True.
func replacedOnceStopped(t *testing.T, a string, pod *corev1.Pod, old types.UID) {
	t.Helper()
	if err := env.Client.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 60*time.Second, func() (bool, string) {
		c, ok := claims(t, a)["census-shared"]
		return ok && (old == "" || c.UID != old) && c.DeletionTimestamp == nil && c.Spec.AccessModes[0] == corev1.ReadWriteMany,
			fmt.Sprintf("claim present %v uid %s modes %v", ok, c.UID, c.Spec.AccessModes)
	})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
}

// takeOff takes the plugin off the Profile and waits until its revoke has
// ended, the plugin's finalizer gone.
func takeOff(t *testing.T, name string) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return false, err.Error()
		}
		return !slices.Contains(p.Finalizers, "profilekit.dev/blobcsi"),
			fmt.Sprintf("finalizers %v, condition %+v", p.Finalizers, plugins.FindCondition(p.Status.Conditions, condType))
	})
}

func TestRetention(t *testing.T) {
	t.Parallel()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	for _, ret := range []plugins.Retention{plugins.RetentionRetain, plugins.RetentionDelete} {
		t.Run(string(ret), func(t *testing.T) {
			h := start(t, hostConfig(t, nil), reconcilers.WithRetention(ret))
			a := unique("keep")
			h.profile(t, a, blobPlugin("standard", "protected-b"))
			waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "protected-b": "ReadWriteMany"})
			if !slices.Contains(containers(t), a) {
				t.Fatalf("container %s missing", a)
			}
			takeOff(t, a)
			if got := liveClaims(t, a); len(got) != 0 {
				t.Errorf("claims after revoke = %v, want all deleted", got)
			}
			has := slices.Contains(containers(t), a)
			if want := ret == plugins.RetentionRetain; has != want {
				t.Errorf("container %s exists = %v after revoke with retention %s, want %v", a, has, ret, want)
			}
			// What the revoke reports (and counts in profilekit_objects_total)
			// is what it did: kept, or deleted.
			action := plugins.Deleted
			if ret == plugins.RetentionRetain {
				action = plugins.Unchanged
			}
			want := serversOf(t).azurite.Account + "/" + a + " " + string(action)
			got := h.applies.revokedContainers(a)
			if len(got) == 0 || slices.ContainsFunc(got, func(c string) bool { return c != want }) {
				t.Errorf("the revoke reported its containers as %q, want each %q", got, want)
			}
			// Azure answered every call: no pass failed on it.
			time.Sleep(time.Second) // Events are sent a moment after they are recorded.
			for _, e := range testhost.Events(t, env.Client, a) {
				if strings.Contains(e, " Warning ") && strings.Contains(e, blobcsi.SystemAzureBlob) {
					t.Errorf("a pass failed on Azure, which answered every call: %s", e)
				}
			}
		})
	}
}

func TestVolumeDeletesAreCapped(t *testing.T) {
	t.Parallel()
	a, b := unique("team-a"), unique("team-b")
	doc := grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a, b}},
		Buckets: map[string]map[string]any{
			"census-1": {"classification": "unclassified", "readers": []string{"census"}, "spn": "sp"},
			"census-2": {"classification": "unclassified", "readers": []string{"census"}, "spn": "sp"},
		},
	}
	putGrants(t, doc)
	// Three volume deletions per hour across the cluster; the grants source
	// may drop everything at once, so that only the cap holds.
	cfg := map[string]any{"maxVolumeDeletes": 3, "deleteWindow": "1h"}
	h := start(t, hostConfigWithDrop(t, cfg, 1), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	h.profile(t, b, blobPlugin())
	both := map[string]string{"standard": "ReadWriteMany", "census-1": "ReadOnlyMany", "census-2": "ReadOnlyMany"}
	waitClaims(t, a, both)
	waitClaims(t, b, both)

	// Withdrawing both buckets would delete four volumes.
	doc.Buckets = map[string]map[string]any{}
	putGrants(t, doc)
	held := 0
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		var msgs []string
		held = 0
		for _, n := range []string{a, b} {
			var p kubeflowv1.Profile
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: n}, &p); err != nil {
				return false, err.Error()
			}
			c := plugins.FindCondition(p.Status.Conditions, condType)
			if c != nil && strings.Contains(c.Message, blobcsi.ReasonVolumeDeletesHeld) {
				held++
				msgs = append(msgs, c.Message)
			}
		}
		return held == 1, fmt.Sprintf("%d Profiles held: %v", held, msgs)
	})
	// One Profile's two volumes went (their claims may still be going when
	// the other's condition says held); the other's two would pass the cap
	// of three, so they stay and its condition says why.
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		ca, cb := liveClaims(t, a), liveClaims(t, b)
		return len(ca)+len(cb) == 4, fmt.Sprintf("claims left %v and %v, want 4 (2 standard + 2 held)", ca, cb)
	})
	for _, n := range []string{a, b} {
		t.Logf("%s claims: %v", n, liveClaims(t, n))
	}
}
