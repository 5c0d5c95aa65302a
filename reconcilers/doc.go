// Package reconcilers runs profilekit plugins.
//
// [Reconciler] is the standalone host: one controller-runtime controller per
// plugin, which watches Profiles, the plugin's own objects and the kinds it
// reads without writing (Definition.Watches, in a cache of their own, metadata
// only when the plugin asks for that), decides whether
// the plugin applies to a Profile (listed in spec.plugins, or enabled for all
// Profiles by the host), applies or revokes it, keeps its finalizer when it has
// state outside the namespace, and reports a <Kind>Ready condition, Events and
// metrics. [CacheOptions] builds a manager cache that holds only the objects
// profilekit labels, so that memory does not grow with unrelated objects.
//
// [Adapter] drops the same plugins into a fork of the upstream Kubeflow profile
// controller, whose Plugin interface has ApplyPlugin and RevokePlugin methods.
package reconcilers
