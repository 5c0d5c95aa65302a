package plugins

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// The labels and names that mark what profilekit owns, and the
// annotations an operator sets on a Profile.
const (
	// LabelManagedBy is set to ManagedByValue on every object we write.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "profilekit"
	// LabelPlugin names the plugin kind that owns an object.
	LabelPlugin = "profilekit.dev/plugin"
	// LabelProfile names the Profile an object belongs to.
	LabelProfile = "profilekit.dev/profile"
	// AnnotationAppliedHash records a hash of the configuration last applied,
	// so that a field we stop setting is noticed without a request. The
	// Profile's name and UID are left out of the hash: objects rendered
	// alike for many Profiles carry the same value.
	AnnotationAppliedHash = "profilekit.dev/applied-hash"
	// FinalizerPrefix starts the per-plugin finalizer profilekit.dev/<kind>.
	FinalizerPrefix = "profilekit.dev/"
	// FieldManagerPrefix starts the per-plugin field manager profilekit-<kind>.
	FieldManagerPrefix = "profilekit-"
	// LabelRole marks objects that are a plugin's bookkeeping rather than
	// part of what it manages; the Applier (plugins/apply) never prunes
	// them.
	LabelRole = "profilekit.dev/role"
	// RoleOutsideState is the LabelRole value of an outside-state record.
	RoleOutsideState = "outside-state"

	// AnnotationPaused stops the plugins' writes for the Profile, as
	// during an incident: "true" pauses every plugin, a comma-separated
	// list of plugin kinds pauses those. A paused plugin writes nothing for
	// the Profile and shows Paused on its condition, but revocation is
	// never paused: a Profile being deleted, or that no longer enables the
	// plugin, is revoked, so that nothing outlives it. Pausing is an
	// operator's tool: a paused Profile also keeps what a policy narrowed
	// since would take back (a cloud identity no longer allowed): the
	// deployment's admission policy (examples/deploy/base/pause-policy.yaml)
	// lets only operators set, change or remove it.
	AnnotationPaused = "profilekit.dev/paused"
	// AnnotationReverify, set to a new value, makes every plugin with
	// outside state verify it now: the next Ensure of each piece calls the
	// outside system even though the record says nothing changed.
	AnnotationReverify = "profilekit.dev/reverify"
)

// FieldManagerFor returns the server-side apply field manager of a plugin kind.
func FieldManagerFor(kind string) string { return FieldManagerPrefix + kind }

// OwnershipLabels returns the labels that mark an object as written by plugin
// kind for the named Profile.
func OwnershipLabels(kind, profile string) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedByValue,
		LabelPlugin:    kind,
		LabelProfile:   profile,
	}
}

// OwnedSelector selects the objects plugin kind wrote for the named Profile.
func OwnedSelector(kind, profile string) labels.Selector {
	return labels.SelectorFromSet(OwnershipLabels(kind, profile))
}

// ManagedSelector selects every object profilekit wrote. Hosts restrict their
// caches of owned kinds with it.
func ManagedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue})
}

// IsOwnedBy reports whether an object with these labels was written by plugin
// kind for the named Profile.
func IsOwnedBy(objLabels map[string]string, kind, profile string) bool {
	return objLabels[LabelManagedBy] == ManagedByValue &&
		objLabels[LabelPlugin] == kind &&
		objLabels[LabelProfile] == profile
}

// OwnerReference returns the owner reference that points an object at its
// Profile. Profiles are cluster-scoped, so the reference is legal from any
// namespace.
func OwnerReference(p *kubeflowv1.Profile) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(kubeflowv1.GroupVersion.String()).
		WithKind("Profile").
		WithName(p.Name).
		WithUID(p.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// Namespace returns the namespace of a Profile, which has the Profile's name.
func Namespace(p *kubeflowv1.Profile) string { return p.Name }

// protected lists the names of the upstream controller's objects; no plugin
// but core may write an object with one of them.
var protected = []string{
	"namespaceAdmin", "default-editor", "default-viewer",
	"ns-owner-access-istio", "kf-resource-quota",
}

// IsUpstreamName reports whether name belongs to the upstream profile
// controller. Only the core plugin, which replaces that controller, writes
// objects of these names (see Definition.Upstream).
func IsUpstreamName(name string) bool {
	for _, n := range protected {
		if n == name {
			return true
		}
	}
	return false
}

// CheckObjectName checks a name that a plugin's config gives one of its
// objects: it must be a DNS-1123 subdomain and not one of the upstream
// controller's names. Each problem is one line of the error, which names
// the value as name "<value>".
func CheckObjectName(name string) error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("name %q: %s", name, strings.Join(msgs, "; ")))
	}
	if IsUpstreamName(name) {
		errs = append(errs, fmt.Errorf("name %q belongs to the upstream profile controller", name))
	}
	return errors.Join(errs...)
}
