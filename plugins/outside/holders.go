package outside

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// HeldElsewhere returns the name of another Profile whose record of this
// plugin holds as made a key that match accepts, or "" when none does: a
// piece of shared outside state, such as a cloud identity, that already
// serves another Profile. Keys only intended (EnsureAhead before its call
// succeeded) do not count. It reads the records through the host's reader,
// a cache, in the records' namespace; two Profiles that claim a piece in
// the same moment may both find it free, which Claim closes.
func (o *Outside) HeldElsewhere(ctx context.Context, match func(key string) bool) (string, error) {
	if o.offline {
		return "", nil
	}
	var list corev1.ConfigMapList
	err := o.reader.List(ctx, &list, client.InNamespace(o.recordNamespace()),
		client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: o.kind, plugins.LabelRole: plugins.RoleOutsideState})
	if err != nil {
		return "", fmt.Errorf("plugin %s: list outside-state records: %w", o.kind, err)
	}
	own := RecordName(o.kind, o.profile.UID)
	slices.SortFunc(list.Items, func(a, b corev1.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	for _, cm := range list.Items {
		if cm.Name == own {
			continue
		}
		var entries map[string]outsideEntry
		if json.Unmarshal([]byte(cm.Data[recordKey]), &entries) != nil {
			continue
		}
		for k, e := range entries {
			if e.Hash != "" && match(k) {
				return cm.Labels[plugins.LabelProfile], nil
			}
		}
	}
	return "", nil
}

// RoleClaim is the LabelRole value of a claim (see Outside.Claim).
const RoleClaim = "claim"

// ClaimName returns the name of the ConfigMap, in the records' namespace,
// that claims piece (such as a cloud identity) for one Profile of plugin
// kind.
func ClaimName(kind, piece string) string {
	sum := sha256.Sum256([]byte(piece))
	return "profilekit-" + strings.ToLower(kind) + "-claim-" + hex.EncodeToString(sum[:10])
}

// ClaimGrace is how long a claim holds with no word of its piece in its
// Profile's record: the time one pass may take from its claim to its
// record's first write of the piece.
const ClaimGrace = 2 * time.Minute

// claimData keys of a claim.
const (
	claimPiece   = "piece"
	claimProfile = "profile"
	claimUID     = "uid"
)

// Claim takes piece for the Profile, or returns the name of another Profile
// that holds it. Records alone cannot say who was first: two passes that
// claim a piece at the same moment both find every record free. A claim is
// a ConfigMap of the piece's name in the records' namespace, and the API
// server creates one object of a name: the pass whose create succeeds has
// the piece. A claim of another Profile holds while that Profile's record
// (read from the API server) holds a key of the piece (the piece itself, or
// a key under piece + "/"), as made or intended, and for ClaimGrace after it was made (that pass may not have
// written its record yet: a retried error, not a Conflict); otherwise it is
// stale (the Profile let the piece go, or is gone) and is taken over. The claim is owned by the Profile, so the
// garbage collector removes it with the Profile. Records written before
// claims existed are read too (HeldElsewhere).
// Call it within the outside call that makes the piece, before the call
// that grants it.
func (o *Outside) Claim(ctx context.Context, piece string) (string, error) {
	if o.offline {
		return o.heldOffline(ctx, piece)
	}
	match := func(k string) bool { return ofPiece(piece, k) }
	name := ClaimName(o.kind, piece)
	for range 2 {
		labels := plugins.OwnershipLabels(o.kind, o.profile.Name)
		labels[plugins.LabelRole] = RoleClaim
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.recordNamespace(), Labels: labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(o.profile, kubeflowv1.GroupVersion.WithKind("Profile"))}},
			Data: map[string]string{claimPiece: piece, claimProfile: o.profile.Name, claimUID: string(o.profile.UID)},
		}
		err := o.writer.Create(ctx, cm, client.FieldOwner(plugins.FieldManagerFor(o.kind)))
		if err == nil {
			return o.elsewhere(ctx, cm, match)
		}
		if !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("plugin %s: claim %s: %w", o.kind, piece, err)
		}
		var held corev1.ConfigMap
		if err := o.liveReader().Get(ctx, client.ObjectKeyFromObject(cm), &held); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return "", fmt.Errorf("plugin %s: read claim of %s: %w", o.kind, piece, err)
		}
		if held.Data[claimUID] == string(o.profile.UID) {
			return o.elsewhere(ctx, &held, match)
		}
		holds, err := o.holds(ctx, types.UID(held.Data[claimUID]), match)
		if err != nil || holds {
			return held.Data[claimProfile], err
		}
		if o.now().Sub(held.CreationTimestamp.Time) < ClaimGrace {
			// A pass of the holder may be between its claim and its
			// record's first word of the piece.
			return "", fmt.Errorf("plugin %s: %s is being claimed by Profile %s at this moment; trying again", o.kind, piece, held.Data[claimProfile])
		}
		// Stale: taken over, unless someone changed it since it was read.
		err = o.writer.Delete(ctx, &held, client.Preconditions{UID: &held.UID, ResourceVersion: &held.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return "", fmt.Errorf("plugin %s: take over the stale claim of %s: %w", o.kind, piece, err)
		}
	}
	return "", fmt.Errorf("plugin %s: claim %s: another pass claims it at the same time; trying again", o.kind, piece)
}

// elsewhere returns HeldElsewhere, and lets the claim go when another
// Profile's record, written before claims, holds the piece: the claim
// would otherwise name the wrong Profile to the next pass that asks.
func (o *Outside) elsewhere(ctx context.Context, claim *corev1.ConfigMap, match func(key string) bool) (string, error) {
	holder, err := o.HeldElsewhere(ctx, match)
	if err != nil || holder == "" {
		return holder, err
	}
	if err := o.writer.Delete(ctx, claim, client.Preconditions{UID: &claim.UID}); err != nil && !apierrors.IsNotFound(err) {
		return holder, fmt.Errorf("plugin %s: let go of the claim of %s: %w", o.kind, claim.Data[claimPiece], err)
	}
	return holder, nil
}

// holds reports whether the record of the Profile of UID uid, read from the
// API server, holds a key match accepts, as made or intended.
func (o *Outside) holds(ctx context.Context, uid types.UID, match func(key string) bool) (bool, error) {
	var cm corev1.ConfigMap
	err := o.liveReader().Get(ctx, types.NamespacedName{Namespace: o.recordNamespace(), Name: RecordName(o.kind, uid)}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("plugin %s: read the outside-state record of a claim's holder: %w", o.kind, err)
	}
	var entries map[string]outsideEntry
	if json.Unmarshal([]byte(cm.Data[recordKey]), &entries) != nil {
		// Undecodable: as good as none for its Profile, which makes every
		// piece again; the claim holds until then.
		return true, nil
	}
	for k := range entries {
		if match(k) {
			return true, nil
		}
	}
	return false, nil
}

// liveReader reads from the API server when the host gave a live reader.
func (o *Outside) liveReader() client.Reader {
	if o.live != nil {
		return o.live
	}
	if o.claims != nil {
		return o.claims
	}
	return o.reader
}

// ofPiece reports whether key is a key of piece: the piece itself, or one
// under piece + "/".
func ofPiece(piece, key string) bool {
	return key == piece || strings.HasPrefix(key, piece+"/")
}

// releaseClaims deletes the Profile's claims (read from the host's reader)
// whose pieces the record no longer holds a key of. The caller holds o.mu.
func (o *Outside) releaseClaims(ctx context.Context) error {
	labels := plugins.OwnershipLabels(o.kind, o.profile.Name)
	labels[plugins.LabelRole] = RoleClaim
	var list corev1.ConfigMapList
	if err := o.reader.List(ctx, &list, client.InNamespace(o.recordNamespace()), client.MatchingLabels(labels)); err != nil {
		return fmt.Errorf("plugin %s: list claims: %w", o.kind, err)
	}
	var errs []error
	for _, cm := range list.Items {
		piece := cm.Data[claimPiece]
		if cm.Data[claimUID] != string(o.profile.UID) || o.hasPiece(piece) {
			continue
		}
		if err := o.writer.Delete(ctx, &cm, client.Preconditions{UID: &cm.UID}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("plugin %s: let go of the claim of %s: %w", o.kind, piece, err))
		}
	}
	return errors.Join(errs...)
}

// hasPiece reports whether the record in memory holds a key of piece. The
// caller holds o.mu.
func (o *Outside) hasPiece(piece string) bool {
	for k := range o.entries {
		if ofPiece(piece, k) {
			return true
		}
	}
	return false
}
