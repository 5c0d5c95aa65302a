package volumes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
	"github.com/profilekit/profilekit/plugins/volumes"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestRevokeKeepsVolume stops serving a Profile that stays: its claim is
// deleted and its volume stays, Released, Retain and marked.
func TestRevokeKeepsVolume(t *testing.T) {
	ctx := t.Context()
	run := "revoke-" + rand.String(4)
	name := "revoke-" + rand.String(5)
	startHost(t, run, hostConfig(storageClass(t, true)))
	newProfile(t, name, run, "alice@example.org", nil)
	pv := provision(t, name, "workspace")
	waitBound(t, name, "workspace")
	waitVolume(t, pv.Name, 20*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain, string(pv.Spec.PersistentVolumeReclaimPolicy)
	})

	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { delete(p.Labels, labelRun) })
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: "workspace"}, &corev1.PersistentVolumeClaim{})
		return apierrors.IsNotFound(err), fmt.Sprintf("claim after revoke: %v", err)
	})
	got := waitVolume(t, pv.Name, 30*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Status.Phase == corev1.VolumeReleased, string(pv.Status.Phase)
	})
	if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || got.Labels[volumes.LabelReleasedAt] == "" {
		t.Errorf("revoked volume: reclaim %s, labels %v", got.Spec.PersistentVolumeReclaimPolicy, got.Labels)
	}
	t.Logf("after revoke: volume %s %s, reclaim %s, released-at %s", got.Name, got.Status.Phase, got.Spec.PersistentVolumeReclaimPolicy, got.Annotations[volumes.AnnotationReleasedAt])
}

// TestRetentionDelete leaves the StorageClass's reclaim policy (Delete) on
// the volume, which the plugin still labels, so that the volume goes with its
// claim as it would without profilekit.
func TestRetentionDelete(t *testing.T) {
	run := "delete-" + rand.String(4)
	name := "delete-" + rand.String(5)
	startHost(t, run, hostConfig(storageClass(t, true)), reconcilers.WithRetention(plugins.RetentionDelete))
	newProfile(t, name, run, "alice@example.org", nil)
	pv := provision(t, name, "workspace")
	waitBound(t, name, "workspace")
	got := waitVolume(t, pv.Name, 20*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Labels[volumes.LabelTemplate] == "home", fmt.Sprintf("labels %v", pv.Labels)
	})
	if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("reclaim policy %s with retention Delete, want the StorageClass's Delete", got.Spec.PersistentVolumeReclaimPolicy)
	}
	t.Logf("retention Delete: volume %s labelled for %s, reclaim %s", got.Name, got.Labels[plugins.LabelProfile], got.Spec.PersistentVolumeReclaimPolicy)
}

// TestRevokeOfAHostWithoutRecords calls Revoke as hosts other than ours
// may: with no outside-state record at all, it still releases the
// Profile's volumes, in one call, a reserved one too; with an offline one
// (a render, no cluster to change), it leaves them as they are.
func TestRevokeOfAHostWithoutRecords(t *testing.T) {
	for _, c := range []struct {
		name     string
		outside  func(kind string, p *kubeflowv1.Profile) plugins.Outside
		reserved bool // for the Profile's claim, not yet bound
		released bool
	}{
		{"no record", func(string, *kubeflowv1.Profile) plugins.Outside { return nil }, false, true},
		{"no record, the volume reserved", func(string, *kubeflowv1.Profile) plugins.Outside { return nil }, true, true},
		{"offline", func(kind string, p *kubeflowv1.Profile) plugins.Outside { return outside.NewOffline(kind, p) }, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			name := "norecord-" + rand.String(5)
			pv := retained(name, storageClass(t, false))
			delete(pv.Labels, volumes.LabelReleasedAt)
			delete(pv.Annotations, volumes.AnnotationReleasedAt)
			if c.reserved {
				pv.Spec.ClaimRef.UID = ""
			}
			if err := env.Client.Create(ctx, pv); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pv) }) //nolint:forbidigo // cleanups run after t.Context is canceled
			// The binder's status write comes before the one call.
			if err := settled(ctx, env.Client, pv.Name); err != nil {
				t.Fatal(err)
			}

			def := volumes.Definition()
			p := &kubeflowv1.Profile{
				ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
				Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: scenarioOwner}},
			}
			cfg, err := def.DecodeHostDefaults(mustJSON(t, hostConfig(pv.Spec.StorageClassName)))
			if err != nil {
				t.Fatal(err)
			}
			objects := apply.New(env.Client, def.Kind(), p, def.Owns, apply.OptionsFor(def)...)
			res, err := def.Plugin.Revoke(ctx, plugins.Request{Profile: p, Config: cfg, Client: env.Client, Objects: objects, Outside: c.outside(def.Kind(), p)})
			if err != nil {
				t.Fatalf("revoke: %v", err)
			}
			got := waitVolume(t, pv.Name, time.Second, func(*corev1.PersistentVolume) (bool, string) { return true, "" })
			if _, released := got.Labels[volumes.LabelReleasedAt]; released != c.released {
				t.Errorf("after the revoke (%s) the volume's release mark is there: %v, want %v (labels %v)", res.Summary(), released, c.released, got.Labels)
			}
			if c.reserved && got.Spec.ClaimRef.UID != p.UID {
				t.Errorf("the reservation was not taken back: claimRef %+v", got.Spec.ClaimRef)
			}
			t.Logf("revoke: %s; volume labels %v", res.Summary(), got.Labels)
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
