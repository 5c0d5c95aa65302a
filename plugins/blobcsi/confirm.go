package blobcsi

// This file holds the reads from the API server that confirm what the
// cache shows before a volume deletion is decided on it.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// confirmClaims reads again, from the API server, every claim that act
// would delete now, so that a cache that has not yet seen an earlier
// pass's deletion does not count that claim against the allowance twice.
// A claim gone is dropped from live, so that its volume goes without
// being counted again; a claim going is taken as it is now; a claim made
// again under the same name since the cache saw it is left to the pass
// that its event brings.
func (p Plugin) confirmClaims(ctx context.Context, req plugins.Request, live liveState, act []pair) ([]pair, error) {
	out := act[:0]
	for _, pr := range act {
		read, err := p.claimUnseen(ctx, req, live, &pr)
		if err != nil {
			return nil, err
		}
		if pr.claim != nil && pr.claim.DeletionTimestamp == nil && !read {
			var now corev1.PersistentVolumeClaim
			err := req.LiveReader().Get(ctx, client.ObjectKeyFromObject(pr.claim), &now)
			switch {
			case apierrors.IsNotFound(err):
				delete(live.pvcs, pr.claim.Name)
				pr.claim = nil
			case err != nil:
				return nil, fmt.Errorf("read PersistentVolumeClaim %s: %w", pr.claim.Name, err)
			case now.UID != pr.claim.UID:
				continue
			default:
				pr.claim = &now
			}
		}
		out = append(out, pr)
	}
	return out, nil
}

// claimUnseen reads, from the API server, the claim that the pair's volume
// is bound to when the cache does not show it: a cache behind the claim's
// creation would otherwise let the volume go at once, uncounted and under
// a claim that still exists. A claim found is put in live, so that the
// volume waits for it to be gone; one of ours becomes the pair's, deleted
// and counted as any other. A read that fails holds the pass. It reports
// whether it read the claim it gave the pair, which needs no second read.
func (p Plugin) claimUnseen(ctx context.Context, req plugins.Request, live liveState, pr *pair) (bool, error) {
	ns := plugins.Namespace(req.Profile)
	if pr.claim != nil || pr.pv == nil || pr.pv.Spec.ClaimRef == nil {
		return false, nil
	}
	ref := pr.pv.Spec.ClaimRef
	if ref.Namespace != ns || ref.Name == "" || live.pvcs[ref.Name] != nil {
		return false, nil
	}
	var now corev1.PersistentVolumeClaim
	err := req.LiveReader().Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &now)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read PersistentVolumeClaim %s, which volume %s is bound to: %w", ref.Name, pr.pv.Name, err)
	case ref.UID != "" && now.UID != ref.UID:
		// Another claim of that name: the volume's own is gone.
		return false, nil
	}
	live.pvcs[ref.Name] = &now
	// Ours only when the volume is bound to this very claim: its labels are
	// the tenant's to write, the volume's binding is not. A claim the volume
	// names but is not bound to holds the volume and is left to the pass
	// whose cache shows it.
	if l := now.Labels; ref.UID != "" && now.UID == ref.UID &&
		l[plugins.LabelManagedBy] == plugins.ManagedByValue && l[plugins.LabelPlugin] == Kind && now.DeletionTimestamp == nil {
		pr.claim = &now
		return true, nil
	}
	return false, nil
}
