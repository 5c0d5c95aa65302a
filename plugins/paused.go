package plugins

import (
	"slices"
	"strings"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// AnnotationPaused, set on a Profile, stops the plugins' writes for it, as
// during an incident: "true" pauses every plugin, a comma-separated list
// of plugin kinds pauses those. A paused plugin writes nothing for the
// Profile and shows Paused on its condition; a Profile being deleted is
// still revoked, so that nothing outlives it.
const AnnotationPaused = "profilekit.dev/paused"

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
