package plugins

import (
	"slices"
	"strings"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// Annotations an operator sets on a Profile.
const (
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

// Paused reports whether p's AnnotationPaused pauses plugin kind.
func Paused(p *kubeflowv1.Profile, kind string) bool {
	v := strings.TrimSpace(p.Annotations[AnnotationPaused])
	if v == "" {
		return false
	}
	if strings.EqualFold(v, "true") {
		return true
	}
	return slices.ContainsFunc(strings.Split(v, ","), func(k string) bool { return strings.EqualFold(strings.TrimSpace(k), kind) })
}
