package volumes_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
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

// TestVolumeBoundUnseenIsKeptWhenLetGo: a claim binds while no host runs
// (or before its pass comes), and the Profile lets it go before any pass
// marked the volume: dropped from the spec, or no longer served at all. The
// StorageClass deletes its volumes, so a claim deleted first would take the
// data with it; the volume is marked the Profile's, Retain, before its claim
// goes, and ends Released with the release mark.
func TestVolumeBoundUnseenIsKeptWhenLetGo(t *testing.T) {
	for _, c := range []struct {
		name   string
		letGo  func(t *testing.T, profile string)
		remain string // the claim that stays, "" for none
	}{
		{"dropped from the spec", func(t *testing.T, profile string) {
			setVolumes(t, profile, map[string]any{"volumes": []map[string]any{{"template": "home"}}})
		}, "workspace"},
		{"no longer served", func(t *testing.T, profile string) {
			testhost.UpdateProfile(t, env.Client, profile, func(p *kubeflowv1.Profile) {
				delete(p.Labels, labelRun)
				p.Spec.Plugins = nil
			})
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := "unseen-" + rand.String(4)
			name := "unseen-" + rand.String(5)
			sc := storageClass(t, false)
			cfg := hostConfig(sc)
			cfg["templates"] = append(cfg["templates"].([]map[string]any), map[string]any{"name": "scratch", "storageClassName": sc, "size": "1Gi"})
			newProfile(t, name, run, "alice@example.org", map[string]any{"volumes": []map[string]any{{"template": "home"}, {"template": "scratch"}}})
			t.Run("first host", func(t *testing.T) {
				startHost(t, run, cfg)
				testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
			})
			// No host runs: the volume binds and nobody marks it.
			scratch := provision(t, name, "scratch")
			waitBound(t, name, "scratch")
			if pv := waitVolume(t, scratch.Name, time.Second, func(*corev1.PersistentVolume) (bool, string) { return true, "" }); len(pv.Labels) != 0 || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
				t.Fatalf("before the host: volume labels %v, reclaim %s; want none and Delete", pv.Labels, pv.Spec.PersistentVolumeReclaimPolicy)
			}
			c.letGo(t, name)
			startHost(t, run, cfg)
			testhost.Eventually(t, 30*time.Second, func() (bool, string) {
				err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "scratch"}, &corev1.PersistentVolumeClaim{})
				return apierrors.IsNotFound(err), fmt.Sprintf("claim scratch: %v", err)
			})
			got := waitVolume(t, scratch.Name, 30*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
				return pv.Status.Phase == corev1.VolumeReleased && pv.Labels[volumes.LabelReleasedAt] != "",
					fmt.Sprintf("volume %s is %s, reclaim %s, labels %v", pv.Name, pv.Status.Phase, pv.Spec.PersistentVolumeReclaimPolicy, pv.Labels)
			})
			if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
				t.Errorf("the volume let go has reclaim policy %s, want Retain", got.Spec.PersistentVolumeReclaimPolicy)
			}
			if got.Labels[plugins.LabelProfile] != name || got.Annotations[volumes.AnnotationOwner] != "alice@example.org" {
				t.Errorf("the volume let go is not marked the Profile's: labels %v, annotations %v", got.Labels, got.Annotations)
			}
			var ws corev1.PersistentVolumeClaim
			err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "workspace"}, &ws)
			if kept := err == nil && ws.DeletionTimestamp == nil; kept != (c.remain == "workspace") {
				t.Errorf("claim workspace: %v (deleted at %v), want kept %t", err, ws.DeletionTimestamp, c.remain == "workspace")
			}
			t.Logf("volume let go unseen: %s, reclaim %s, released-at %s", got.Status.Phase, got.Spec.PersistentVolumeReclaimPolicy, got.Annotations[volumes.AnnotationReleasedAt])
		})
	}
}
