package blobcsi

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/plugins"
)

// rebind lets the claim of v bind pv again after the claim pv was bound to
// is gone (its tenant deleted it: the volume is then released, and its
// claimRef keeps the deleted claim's uid, so the claim the plugin makes
// again under the name would stay Pending for good). It clears the uid, so
// that only a claim of that name in the Profile's namespace can bind the
// volume, as when it was first made. The claim is asked of the API server
// first, never the cache, which may not show a claim made a moment before
// and already bound: clearing the uid of a bound volume would leave its
// claim Lost. A claim of the name that is not the plugin's is left to the
// Conflict the plugin's apply reports. It reports whether it patched.
func rebind(ctx context.Context, req plugins.Request, pv *corev1.PersistentVolume, cached *corev1.PersistentVolumeClaim) (bool, error) {
	ns := plugins.Namespace(req.Profile)
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" || ref.Namespace != ns || pv.DeletionTimestamp != nil ||
		cached != nil && cached.UID == ref.UID {
		return false, nil
	}
	var now corev1.PersistentVolumeClaim
	err := req.LiveReader().Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &now)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("read claim %s/%s: %w", ns, ref.Name, err)
	case now.UID == ref.UID || !plugins.IsOwnedBy(now.Labels, Kind, req.Profile.Name):
		return false, nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pv.UID, "resourceVersion": pv.ResourceVersion},
		"spec":     map[string]any{"claimRef": map[string]any{"uid": nil, "resourceVersion": nil}},
	})
	if err != nil {
		return false, err
	}
	target := &corev1.PersistentVolume{}
	target.Name = pv.Name
	if err := req.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(plugins.FieldManagerFor(Kind))); err != nil {
		return false, fmt.Errorf("let claim %s/%s bind volume %s again: %w", ns, ref.Name, pv.Name, err)
	}
	log.FromContext(ctx).Info("volume given back to its claim, which was deleted and is made again", "volume", pv.Name, "claim", types.NamespacedName{Namespace: ns, Name: ref.Name})
	return true, nil
}
