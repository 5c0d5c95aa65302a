package apply

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// Option configures an Applier.
type Option func(*Applier)

// WithLiveReader sets an uncached reader that is asked when an object of a
// desired name exists but the cache does not hold it: a cache restricted to
// our labels cannot see an object we do not manage, and any cache may not yet
// hold an object we have just written. Without it the Applier asks its
// cache again, and reports an object the cache cannot show as not ours
// (Skipped, a Conflict error); nothing is overwritten either way.
func WithLiveReader(r client.Reader) Option {
	return func(a *Applier) { a.live = r }
}

// WithScheme makes the Applier read live objects as the typed objects the
// scheme knows (sharing the host's typed informers) instead of unstructured.
func WithScheme(s *runtime.Scheme) Option {
	return func(a *Applier) { a.scheme = s }
}

// WithMetadataOnly makes the Applier read and list objects of kinds as
// metadata only (*metav1.PartialObjectMetadata), the form in which a host
// caches the owned kinds whose bodies no plugin reads (see reconcilers).
// Whether such an object holds what we want is then told by its
// applied-hash annotation and our managed-fields entry alone: server-side
// apply takes a field from our manager when anyone else changes or removes
// it, so every edit of a field we own shows there (see overtaken). An object
// without managed fields tells nothing and is applied again.
func WithMetadataOnly(kinds ...schema.GroupVersionKind) Option {
	return func(a *Applier) { a.metadata = append(a.metadata, kinds...) }
}

// WithAnyNamespace lets the plugin write objects outside the Profile's
// namespace. Pruning then lists the plugin's objects across all namespaces,
// which costs a scan of every cached object of each owned kind; without it,
// objects must be in the Profile's namespace and pruning lists only that
// namespace, which a cache answers from its namespace index. Hosts set it for
// plugins whose Definition has OutsideState.
func WithAnyNamespace() Option {
	return func(a *Applier) { a.anyNamespace = true }
}

// WithUpstreamObjects lets the plugin write what the upstream profile
// controller writes: the Profile's namespace (the one cluster-scoped object an
// Applier ever writes) and objects with upstream's names inside it. Hosts set
// it for the Definition with Upstream, which only the core plugin may have;
// every other rule of the Applier still holds.
func WithUpstreamObjects() Option {
	return func(a *Applier) { a.upstream = true }
}

// WithShardLabels gives every object the Applier writes the Profile's
// value of each label key that shard reads, under ShardKey of the key, and
// no such label when the Profile has none: ObjectShard(shard) then selects
// a Profile's objects exactly when shard selects the Profile. A host that
// serves a shard of the Profiles passes its shard selector, so that its
// cache can hold its shard's objects only (see reconcilers). nil, or a
// selector of every Profile, adds nothing.
func WithShardLabels(shard labels.Selector) Option {
	return func(a *Applier) {
		for _, k := range shardKeys(shard) {
			if !slices.Contains(a.shardKeys, k) {
				a.shardKeys = append(a.shardKeys, k)
			}
		}
	}
}

// OptionsFor returns the options an Applier for d's plugin needs: writing
// beyond the Profile's namespace for plugins with outside state, and the
// upstream objects for the core plugin. Hosts pass them to New and
// NewRecorder.
func OptionsFor(d plugins.Definition) []Option {
	var opts []Option
	if d.OutsideState {
		opts = append(opts, WithAnyNamespace())
	}
	if d.Upstream {
		opts = append(opts, WithUpstreamObjects())
	}
	if len(d.Exclusive) > 0 {
		opts = append(opts, WithExclusive(d.Exclusive...))
	}
	return opts
}

// WithExclusive names the kinds whose objects the Applier keeps exactly as
// desired (see plugins.Definition.Exclusive): one of its objects that
// another field manager set fields on is deleted, ours by UID, and made
// again.
func WithExclusive(kinds ...schema.GroupVersionKind) Option {
	return func(a *Applier) { a.exclusive = append(a.exclusive, kinds...) }
}
