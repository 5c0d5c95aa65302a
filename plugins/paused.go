package plugins

import (
	"slices"
	"strings"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
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
