package volumes

// This file holds how the plugin hands a retained volume to a claim and
// takes it back: the reservation (a claimRef without a uid) and its end.

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

// reserve gives a retained volume to the claim ns/claim: it points its
// claimRef at the claim, without the earlier claim's uid, so that only that
// claim can bind it, then marks it as the Profile's again (no longer
// released). The claimRef patch carries the resourceVersion pv was read
// at: pv may come from a cache, and a volume that another Profile of the
// owner took meanwhile, or that a claim bound, must not be taken from it.
func reserve(ctx context.Context, w client.Writer, pv *corev1.PersistentVolume, state VolumeState, ns, claim, claimUID string) (plugins.Result, error) {
	var res plugins.Result
	if !Reserved(pv, ns, claim, claimUID) {
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"uid": pv.UID, "resourceVersion": pv.ResourceVersion},
			"spec": map[string]any{"claimRef": map[string]any{
				"apiVersion": "v1", "kind": "PersistentVolumeClaim",
				"namespace": ns, "name": claim, "uid": nil, "resourceVersion": nil,
			}},
		})
		if err != nil {
			return res, err
		}
		target := &corev1.PersistentVolume{}
		target.Name = pv.Name
		if err := w.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(plugins.FieldManagerFor(Kind))); err != nil {
			return res, fmt.Errorf("reserve persistent volume %s for claim %s/%s: %w", pv.Name, ns, claim, err)
		}
		log.FromContext(ctx).Info("retained volume given back", "volume", pv.Name, "claim", types.NamespacedName{Namespace: ns, Name: claim})
		res.Add(plugins.Change{Kind: "PersistentVolume", Name: pv.Name, Action: plugins.Configured})
	}
	marked, err := applyState(ctx, w, pv, state)
	res.Merge(marked)
	return res, err
}

// claimUID returns the uid of the Profile's claim named claim, which a
// volume that names it may already be bound to: live's, or, when the cache
// shows no such claim and the volume names it with a uid, the claim's as
// the API server has it ("" when there is none). A claim made a moment
// before and not yet in the cache thus keeps its volume: clearing the uid
// of a bound volume's claimRef would leave the claim Lost.
func (p Plugin) claimUID(ctx context.Context, req plugins.Request, live *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, claim string) (string, error) {
	if live != nil {
		return string(live.UID), nil
	}
	ns := plugins.Namespace(req.Profile)
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID == "" || ref.Namespace != ns || ref.Name != claim {
		return "", nil
	}
	var now corev1.PersistentVolumeClaim
	err := req.LiveReader().Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &now)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read claim %s/%s: %w", ns, claim, err)
	}
	return string(now.UID), nil
}

// unreserve takes back a reservation that Apply made (a claimRef without a
// uid, which lets only a claim of that name in that namespace bind the
// volume) from a Profile that goes before its claim bound: otherwise the
// binder would later bind the volume to a claim of that name in the next
// namespace of that name, whoever owns it, and hand them the data. The
// claimRef gets the Profile's uid, which no claim has, so that Kubernetes
// takes the volume as released (never bound again on its own) until the
// owner's next Profile reserves it anew. The patch carries the
// resourceVersion pv was read at, so a volume a claim bound meanwhile is
// not touched.
func unreserve(ctx context.Context, w client.Writer, pv *corev1.PersistentVolume, uid types.UID) (plugins.Result, error) {
	var res plugins.Result
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pv.UID, "resourceVersion": pv.ResourceVersion},
		"spec":     map[string]any{"claimRef": map[string]any{"uid": uid}},
	})
	if err != nil {
		return res, err
	}
	target := &corev1.PersistentVolume{}
	target.Name = pv.Name
	if err := w.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(plugins.FieldManagerFor(Kind))); err != nil {
		return res, fmt.Errorf("take back the reservation of persistent volume %s: %w", pv.Name, err)
	}
	log.FromContext(ctx).Info("reservation taken back: the Profile went before its claim bound", "volume", pv.Name)
	target.DeepCopyInto(pv)
	res.Add(plugins.Change{Kind: "PersistentVolume", Name: pv.Name, Action: plugins.Configured})
	return res, nil
}
