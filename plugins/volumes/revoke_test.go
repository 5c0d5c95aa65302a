package volumes_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
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
