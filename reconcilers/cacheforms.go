package reconcilers

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/profilekit/profilekit/plugins"
)

// cachedWhole reports whether a host caches objects of gvk whole for the
// plugin, rather than their metadata only: kinds in Reads, and ConfigMaps,
// the kind of the outside-state record that Outside reads.
func cachedWhole(d plugins.Definition, gvk schema.GroupVersionKind) bool {
	return gvk == configMapGVK || slices.Contains(d.Reads, gvk)
}

// metadataOnly returns the kinds in Owns that a host caches, and the
// plugin's Applier reads, as metadata only, leaving out also the kinds in
// whole, which other plugins of the host read whole (see WholeKinds).
func metadataOnly(d plugins.Definition, whole ...schema.GroupVersionKind) []schema.GroupVersionKind {
	var kinds []schema.GroupVersionKind
	for _, gvk := range d.Owns {
		if !cachedWhole(d, gvk) && !slices.Contains(whole, gvk) {
			kinds = append(kinds, gvk)
		}
	}
	return kinds
}

// WholeKinds returns the owned kinds that some of defs read whole, sorted. A
// host that runs defs together caches those whole for every plugin that owns
// them, so that it keeps one cache of each kind, not a whole one and a
// metadata one.
func WholeKinds(defs ...plugins.Definition) []schema.GroupVersionKind {
	var kinds []schema.GroupVersionKind
	for _, d := range defs {
		for _, gvk := range d.Owns {
			if cachedWhole(d, gvk) && !slices.Contains(kinds, gvk) {
				kinds = append(kinds, gvk)
			}
		}
	}
	slices.SortFunc(kinds, func(x, y schema.GroupVersionKind) int { return strings.Compare(x.String(), y.String()) })
	return kinds
}
