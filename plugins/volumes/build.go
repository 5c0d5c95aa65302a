package volumes

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// The labels and annotations that find a volume again.
const (
	// LabelTemplate on a claim and its volume names the template.
	LabelTemplate = "volumes.profilekit.dev/template"
	// LabelOwner on a volume is OwnerHash of the Profile owner's name,
	// which is not always a valid label value.
	LabelOwner = "volumes.profilekit.dev/owner"
	// AnnotationOwner on a claim and its volume is the Profile owner's name.
	AnnotationOwner = "volumes.profilekit.dev/owner"
	// LabelReleasedAt on a volume is when its Profile let it go, in Unix
	// seconds; the sweeper deletes by it.
	LabelReleasedAt = "volumes.profilekit.dev/released-at"
	// AnnotationReleasedAt is the same time in RFC 3339, for people.
	AnnotationReleasedAt = "volumes.profilekit.dev/released-at"
)

// OwnerHash returns the value of LabelOwner for an owner's name.
func OwnerHash(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(sum[:12])
}

// Claim returns the PersistentVolumeClaim of template t for Profile p.
// volumeName, when not empty, binds the claim to that volume.
func Claim(p *kubeflowv1.Profile, t Template, size resource.Quantity, volumeName string) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelTemplate] = t.Name
	spec := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(t.AccessModes...).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: size}))
	if t.StorageClassName != "" {
		spec.WithStorageClassName(t.StorageClassName)
	}
	if volumeName != "" {
		spec.WithVolumeName(volumeName)
	}
	c := corev1ac.PersistentVolumeClaim(t.ClaimName, plugins.Namespace(p)).
		WithLabels(labels).
		WithSpec(spec)
	if owner := p.Spec.Owner.Name; owner != "" {
		c.WithAnnotations(map[string]string{AnnotationOwner: owner})
	}
	return c
}

// ClaimSize decides the claim's storage request: what the Profile asks
// (or the template's size), never below what the live claim already
// requests (claims do not shrink). A larger request for a live claim needs
// a StorageClass that allows expansion; without one the live size stays and
// the returned message says why.
func ClaimSize(t Template, v Volume, live *resource.Quantity, sc *storagev1.StorageClass) (resource.Quantity, string) {
	want := t.Size
	if v.Size != nil {
		want = *v.Size
	}
	if live == nil || want.Cmp(*live) <= 0 {
		if live != nil {
			return *live, ""
		}
		return want, ""
	}
	if sc == nil || sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		class := t.StorageClassName
		if sc != nil {
			class = sc.Name
		}
		return *live, fmt.Sprintf("claim %s: size %s asked, StorageClass %q does not allow volume expansion; it stays %s",
			t.ClaimName, want.String(), class, live.String())
	}
	return want, ""
}

// VolumeState is what the plugin owns on a PersistentVolume: its labels,
// annotations and reclaim policy.
type VolumeState struct {
	Labels      map[string]string
	Annotations map[string]string
	Reclaim     corev1.PersistentVolumeReclaimPolicy
}

// State returns what the plugin owns on the volume of template t for
// Profile p. released, when not zero, marks the volume as let go then.
func State(kind string, p *kubeflowv1.Profile, t Template, reclaim corev1.PersistentVolumeReclaimPolicy, released time.Time) VolumeState {
	s := VolumeState{
		Labels:      plugins.OwnershipLabels(kind, p.Name),
		Annotations: map[string]string{},
		Reclaim:     reclaim,
	}
	s.Labels[LabelTemplate] = t.Name
	s.Labels[LabelOwner] = OwnerHash(p.Spec.Owner.Name)
	s.Annotations[AnnotationOwner] = p.Spec.Owner.Name
	if !released.IsZero() {
		s.Labels[LabelReleasedAt] = strconv.FormatInt(released.Unix(), 10)
		s.Annotations[AnnotationReleasedAt] = released.UTC().Format(time.RFC3339)
	}
	return s
}

// Released returns the state with the release marks of at, unless the live
// volume already carries them (the first release is the one that counts).
func (s VolumeState) Released(live *corev1.PersistentVolume, at time.Time) VolumeState {
	out := VolumeState{Labels: maps.Clone(s.Labels), Annotations: maps.Clone(s.Annotations), Reclaim: s.Reclaim}
	if v, ok := live.Labels[LabelReleasedAt]; ok {
		out.Labels[LabelReleasedAt] = v
		out.Annotations[AnnotationReleasedAt] = live.Annotations[AnnotationReleasedAt]
		return out
	}
	out.Labels[LabelReleasedAt] = strconv.FormatInt(at.Unix(), 10)
	out.Annotations[AnnotationReleasedAt] = at.UTC().Format(time.RFC3339)
	return out
}

// Apply returns the configuration that makes s true on the named volume.
func (s VolumeState) Apply(name string) *corev1ac.PersistentVolumeApplyConfiguration {
	ac := corev1ac.PersistentVolume(name).
		WithLabels(s.Labels).
		WithAnnotations(s.Annotations)
	if s.Reclaim != "" {
		ac.WithSpec(corev1ac.PersistentVolumeSpec().WithPersistentVolumeReclaimPolicy(s.Reclaim))
	}
	return ac
}

// Holds reports whether the live volume is in state s: every label and
// annotation of s with its value, no release mark that s does not have,
// and the reclaim policy.
func (s VolumeState) Holds(live *corev1.PersistentVolume) bool {
	for k, v := range s.Labels {
		if live.Labels[k] != v {
			return false
		}
	}
	for k, v := range s.Annotations {
		if live.Annotations[k] != v {
			return false
		}
	}
	if _, ok := s.Labels[LabelReleasedAt]; !ok {
		if _, marked := live.Labels[LabelReleasedAt]; marked {
			return false
		}
	}
	return s.Reclaim == "" || live.Spec.PersistentVolumeReclaimPolicy == s.Reclaim
}

// Reclaim returns the reclaim policy the plugin wants on its volumes: Retain
// unless retention is Delete, which restores the StorageClass's own policy.
func Reclaim(retention plugins.Retention, sc *storagev1.StorageClass) corev1.PersistentVolumeReclaimPolicy {
	if retention != plugins.RetentionDelete {
		return corev1.PersistentVolumeReclaimRetain
	}
	if sc != nil && sc.ReclaimPolicy != nil {
		return *sc.ReclaimPolicy
	}
	return corev1.PersistentVolumeReclaimDelete
}

// Seeker says which retained volumes a Profile may get back.
type Seeker struct {
	Profile  string
	Owner    string
	Match    Match
	Template string
}

// Retained returns the volume that the claim ns/claim of s's template should
// bind to, from all volumes: the one already reserved for or bound to that
// claim, else the oldest released one of the same owner and template (and
// Profile, unless Match is Owner). A volume of another owner never matches.
func (s Seeker) Retained(pvs []corev1.PersistentVolume, ns, claim string) *corev1.PersistentVolume {
	var candidates []*corev1.PersistentVolume
	for i := range pvs {
		pv := &pvs[i]
		l := pv.Labels
		if l[plugins.LabelManagedBy] != plugins.ManagedByValue || l[plugins.LabelPlugin] != Kind ||
			l[LabelTemplate] != s.Template || s.Owner == "" || l[LabelOwner] != OwnerHash(s.Owner) ||
			pv.Annotations[AnnotationOwner] != s.Owner || !pv.DeletionTimestamp.IsZero() {
			continue
		}
		if s.Match != MatchOwner && l[plugins.LabelProfile] != s.Profile {
			continue
		}
		if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == ns && ref.Name == claim {
			return pv
		}
		if pv.Status.Phase == corev1.VolumeReleased {
			candidates = append(candidates, pv)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	return slices.MinFunc(candidates, func(a, b *corev1.PersistentVolume) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
}

// Reserved reports whether pv's claimRef already names the claim ns/name and
// no earlier claim of that name (a uid is set only once a claim bound).
func Reserved(pv *corev1.PersistentVolume, ns, name string, claimUID string) bool {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Namespace != ns || ref.Name != name {
		return false
	}
	return ref.UID == "" || string(ref.UID) == claimUID
}
