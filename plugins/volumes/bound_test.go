package volumes_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/volumes"
)

// TestClaimBoundToAnotherOwnersVolume: the Profile's claim ends up bound to
// a volume retained for another owner of the name (an operator's
// pre-binding, a provisioner's mistake). The volume's data is another's:
// the plugin reports a Conflict and leaves the volume as it is, never
// relabelling it for the Profile or changing its reclaim policy, pass after
// pass.
func TestClaimBoundToAnotherOwnersVolume(t *testing.T) {
	run := "theirs-" + rand.String(4)
	name := "theirs-" + rand.String(5)
	host := startHost(t, run, hostConfig(storageClass(t, false)))
	newProfile(t, name, run, "alice@example.org", nil)
	theirs := map[string]string{
		plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: volumes.Kind, plugins.LabelProfile: name,
		volumes.LabelTemplate: "home", volumes.LabelOwner: volumes.OwnerHash("mallory@example.org"),
	}
	pv := provisionAs(t, name, "workspace", func(pv *corev1.PersistentVolume) {
		pv.Labels = theirs
		pv.Annotations[volumes.AnnotationOwner] = "mallory@example.org"
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	})
	waitBound(t, name, "workspace")

	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "labelled for another owner")
	if !strings.Contains(cond.Message, plugins.ReasonConflict) {
		t.Errorf("%s message %q does not name a %s", condType, cond.Message, plugins.ReasonConflict)
	}
	host.ResyncWrites(t, 3, volumes.Kind)
	var got corev1.PersistentVolume
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pv), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(theirs, got.Labels); diff != "" {
		t.Errorf("the other owner's volume was relabelled (-want +got):\n%s", diff)
	}
	if o := got.Annotations[volumes.AnnotationOwner]; o != "mallory@example.org" {
		t.Errorf("the other owner's volume now names owner %q", o)
	}
	if r := got.Spec.PersistentVolumeReclaimPolicy; r != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("the other owner's volume's reclaim policy became %s", r)
	}
	t.Logf("%s=%s: %s; volume %s %s, labels %v", condType, cond.Status, cond.Message, got.Name, got.Status.Phase, got.Labels)
}

// TestVolumeLetGoIsMarkedReleased: a Profile stops asking for one of its
// volumes while a pod still uses its claim. The volume is not let go while
// the claim's deletion waits; once the claim is gone, the volume stays
// (Retain) Released and carries the release mark that the retention's clock
// reads. The volume the Profile still asks for is left as it was.
func TestVolumeLetGoIsMarkedReleased(t *testing.T) {
	run := "letgo-" + rand.String(4)
	name := "letgo-" + rand.String(5)
	sc := storageClass(t, false)
	cfg := hostConfig(sc)
	cfg["templates"] = append(cfg["templates"].([]map[string]any), map[string]any{"name": "scratch", "storageClassName": sc, "size": "1Gi"})
	startHost(t, run, cfg)
	newProfile(t, name, run, "alice@example.org", map[string]any{"volumes": []map[string]any{{"template": "home"}, {"template": "scratch"}}})
	home, scratch := provision(t, name, "workspace"), provision(t, name, "scratch")
	waitBound(t, name, "workspace")
	waitBound(t, name, "scratch")
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	// A pod still uses the claim: its deletion waits, and the volume stays
	// Bound, not yet let go.
	inUse := func(add bool) {
		t.Helper()
		var c corev1.PersistentVolumeClaim
		key := client.ObjectKey{Namespace: name, Name: "scratch"}
		if err := env.Client.Get(t.Context(), key, &c); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(c.DeepCopy())
		c.Finalizers = nil
		if add {
			c.Finalizers = []string{"volumes.test/in-use"}
		}
		if err := env.Client.Patch(t.Context(), &c, patch); err != nil {
			t.Fatal(err)
		}
	}
	inUse(true)
	setVolumes(t, name, map[string]any{"volumes": []map[string]any{{"template": "home"}}})
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		var c corev1.PersistentVolumeClaim
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "scratch"}, &c)
		return err == nil && c.DeletionTimestamp != nil, fmt.Sprintf("claim scratch not yet being deleted: %v", err)
	})
	time.Sleep(2 * time.Second) // passes every 300 ms
	if pv := waitVolume(t, scratch.Name, time.Second, func(*corev1.PersistentVolume) (bool, string) { return true, "" }); pv.Labels[volumes.LabelReleasedAt] != "" {
		t.Errorf("the volume of a claim still in use (%s) was marked released: %v", pv.Status.Phase, pv.Labels)
	}
	inUse(false)
	got := waitVolume(t, scratch.Name, 30*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Status.Phase == corev1.VolumeReleased && pv.Labels[volumes.LabelReleasedAt] != "",
			fmt.Sprintf("volume %s is %s, labels %v", pv.Name, pv.Status.Phase, pv.Labels)
	})
	if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("the volume let go has reclaim policy %s, want Retain", got.Spec.PersistentVolumeReclaimPolicy)
	}
	kept := waitVolume(t, home.Name, time.Second, func(*corev1.PersistentVolume) (bool, string) { return true, "" })
	if kept.Status.Phase != corev1.VolumeBound || kept.Labels[volumes.LabelReleasedAt] != "" {
		t.Errorf("the volume still asked for is %s, labels %v", kept.Status.Phase, kept.Labels)
	}
	t.Logf("volume let go: %s, released-at %s; volume kept: %s", got.Status.Phase, got.Annotations[volumes.AnnotationReleasedAt], kept.Status.Phase)
}
