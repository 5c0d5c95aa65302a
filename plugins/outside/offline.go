package outside

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WithClaimsFrom lets an offline Outside (NewOffline) answer Claim without
// writing: it reads, through r, the claim of the piece and its holder's
// record in namespace, the records' namespace of the host, as Claim does.
// The admission webhook uses it to refuse a Profile that names a piece of
// shared outside state (a cloud identity) another Profile holds.
func WithClaimsFrom(r client.Reader, namespace string) Option {
	return func(o *Outside) { o.claims, o.opts.Namespace = r, namespace }
}

// heldOffline is Claim offline: the name of another Profile whose claim of
// piece holds (its record holds a key of the piece), or "". It writes
// nothing; without a reader (WithClaimsFrom) it knows nothing and says "".
// A claim of the Profile itself (its UID, or its name before it has one)
// and a stale claim, which Claim would take over, are no holder.
func (o *Outside) heldOffline(ctx context.Context, piece string) (string, error) {
	if o.claims == nil {
		return "", nil
	}
	var held corev1.ConfigMap
	err := o.claims.Get(ctx, types.NamespacedName{Namespace: o.recordNamespace(), Name: ClaimName(o.kind, piece)}, &held)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("plugin %s: read the claim of %s: %w", o.kind, piece, err)
	}
	holder, uid := held.Data[claimProfile], types.UID(held.Data[claimUID])
	if uid == o.profile.UID || holder == o.profile.Name {
		return "", nil
	}
	holds, err := o.holds(ctx, uid, func(k string) bool { return ofPiece(piece, k) })
	if err != nil || !holds {
		return "", err
	}
	return holder, nil
}

// Unchecked returns what an offline pass said it could not check (see
// NotChecked), in the order said.
func (o *Outside) Unchecked() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.unchecked)
}

// NotChecked records, in an offline pass, a check that only the outside
// system can answer (a tag read from the cloud): offline rendering and the
// admission webhook say it was not checked. Online it does nothing: the
// pass checks it in its outside call.
func (o *Outside) NotChecked(what string) {
	if !o.offline {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.unchecked = append(o.unchecked, what)
}
