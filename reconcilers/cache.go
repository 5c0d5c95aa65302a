package reconcilers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
)

// CacheOptions returns manager cache options under which every kind is
// cached only for the objects profilekit labels, except Profiles, which are
// cached in full (or only those in the shard). A cluster's unrelated Secrets,
// ConfigMaps and RoleBindings never reach memory. The kinds a plugin watches
// without writing them (Definition.Watches) get a cache of their own. A
// Reconciler reads the owned kinds its plugin does not read whole
// (Definition.Reads) as *metav1.PartialObjectMetadata, so those informers
// hold metadata only.
//
// With a shard, the objects are cached only when they are in the shard too:
// a Reconciler made WithShard gives every object it writes the Profile's
// values of the shard selector's label keys under keys of profilekit's own
// (apply.WithShardLabels), which apply.ObjectShard selects exactly when the
// shard selects the Profile, and each of several hosts holds its own
// shard's objects only.
//
// The objects in the unsharded namespaces, the host's own, are cached
// whatever their shard labels: those passed, or, when none is,
// outside.DefaultRecordsNamespace. They must hold the outside-state
// records' namespace (records, claims and ledgers are read across shards:
// a claim on a cloud identity must see every other Profile's), and that of
// any object of ours the host writes without a Reconciler. A shard
// selector that selects every Profile shards nothing.
//
// Cached objects keep only profilekit's own managed-fields entries, the only
// ones the Applier reads, and Profiles none: managed fields are most of a
// small object's size. A status update sent from a cached Profile leaves
// the stored managed fields as they are, as the API server does for any
// write without them. The strings and, for kinds without Go types, the
// decoded JSON values that objects of many Profiles repeat are held once
// (see compact): cached objects are never written to, readers get copies.
func CacheOptions(shard labels.Selector, unsharded ...string) cache.Options {
	// A nil selector would take the default (our label), which no Profile has.
	profiles := cache.ByObject{Label: labels.Everything(), Transform: cache.TransformStripManagedFields()}
	opts := cache.Options{
		DefaultLabelSelector: plugins.ManagedSelector(),
		DefaultTransform:     compact,
		ByObject: map[client.Object]cache.ByObject{
			&kubeflowv1.Profile{}: profiles,
		},
	}
	if shard == nil {
		return opts
	}
	profiles.Label = shard
	opts.ByObject[&kubeflowv1.Profile{}] = profiles
	// A shard of no requirement, or one whose keys cannot be carried
	// (ShardKey makes none such), caches every object, as a host of every
	// Profile does.
	objects, err := apply.ObjectShard(shard)
	if err != nil {
		return opts
	}
	reqs, _ := objects.Requirements()
	if len(reqs) == 0 {
		return opts
	}
	opts.DefaultLabelSelector = plugins.ManagedSelector().Add(reqs...)
	opts.DefaultNamespaces = map[string]cache.Config{cache.AllNamespaces: {}}
	if len(unsharded) == 0 {
		unsharded = []string{outside.DefaultRecordsNamespace}
	}
	for _, ns := range unsharded {
		opts.DefaultNamespaces[ns] = cache.Config{LabelSelector: plugins.ManagedSelector()}
	}
	return opts
}

// compact keeps only profilekit's managed-fields entries of a cached object,
// reduced to the fields they name (apply.FieldNames), and makes the strings that many cached objects repeat (label keys and
// values, owner references, our managed-fields entry) share one copy.
//
// A watch-list sync hands each object to the transform twice, the second
// time after compact is done with it; compact then returns it as it is.
func compact(in any) (any, error) {
	switch obj := in.(type) {
	case *unstructured.Unstructured:
		if compactedUnstructured(obj.Object) {
			return in, nil
		}
		keepOwnManagedFields(obj)
		obj.Object = compactUnstructured(obj.Object)
	case *metav1.PartialObjectMetadata:
		if compacted(obj) {
			return in, nil
		}
		// An owned kind cached as metadata only: its type says which kind.
		obj.APIVersion, obj.Kind = intern(obj.APIVersion), intern(obj.Kind)
		keepOwnManagedFields(obj)
		internMeta(obj)
	case metav1.Object:
		if compacted(obj) {
			return in, nil
		}
		keepOwnManagedFields(obj)
		internMeta(obj)
		shareBody(obj)
	}
	return in, nil
}

// compactWatched drops the managed fields of an object a plugin watches (no
// reader of a watched kind needs them) and interns its metadata's strings
// as compact does.
func compactWatched(in any) (any, error) {
	switch obj := in.(type) {
	case *unstructured.Unstructured:
		obj.SetManagedFields(nil)
		obj.Object = compactUnstructured(obj.Object)
	case metav1.Object:
		obj.SetManagedFields(nil)
		internMeta(obj)
	}
	return in, nil
}

// othersOwnFields stands, in a cached object, for the managed-fields entries
// of managers other than profilekit's that own fields of its body or
// metadata.
var othersOwnFields = metav1.ManagedFieldsEntry{Manager: "others", Operation: metav1.ManagedFieldsOperationUpdate,
	FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:others":{}}`)}}

// keepOwnManagedFields drops every managed-fields entry but profilekit's
// plugins' from obj (with othersOwnFields in place of the others', when they
// own fields), and the time of those it keeps. It writes a new list:
// the one obj holds may be shared with cached objects (a watch-list sync
// transforms each object twice, the second time after compact shared its
// parts), and readers may be copying those at any time.
func keepOwnManagedFields(obj metav1.Object) {
	entries := obj.GetManagedFields()
	var ours []metav1.ManagedFieldsEntry
	others := false
	for _, e := range entries {
		if !strings.HasPrefix(e.Manager, plugins.FieldManagerPrefix) {
			others = others || e.Subresource == "" && e.FieldsV1 != nil && len(e.FieldsV1.Raw) > len("{}")
			continue
		}
		// Nothing reads when a manager last wrote, nor the keys of list
		// items (which name the Profile's UID); without them equal entries
		// of many Profiles' objects can be shared.
		e.Time = nil
		if e.FieldsV1 != nil {
			e.FieldsV1 = &metav1.FieldsV1{Raw: apply.FieldNames(e.FieldsV1.Raw)}
		}
		ours = append(ours, e)
	}
	switch {
	case others:
		// Some other manager owns fields of the object: one shared entry
		// says so, for the kinds a plugin keeps whole (apply.WithExclusive).
		ours = append(ours, othersOwnFields)
	case len(ours) == 0 && len(entries) > 0:
		// An empty list would read as "no managed fields": keep one entry
		// that says none of them is ours.
		ours = []metav1.ManagedFieldsEntry{{Manager: "others"}}
	}
	obj.SetManagedFields(slices.Clip(ours))
}

// watchCache is a cache of the kinds a plugin watches but does not write. It
// is apart from the manager's cache because that one keeps only our objects
// (and a cache entry there would widen it for every informer of the kind,
// typed ones included). A PartialObjectMetadata watch keeps metadata only.
type watchCache struct {
	cache.Cache
	// stopped, when set, runs once the cache has stopped.
	stopped func()
}

// GetCache makes the manager start the cache with its own caches, and wait
// for it to sync, before any controller starts.
func (w watchCache) GetCache() cache.Cache { return w.Cache }

// Start runs the cache until ctx ends.
func (w watchCache) Start(ctx context.Context) error {
	if w.stopped != nil {
		defer w.stopped()
	}
	return w.Cache.Start(ctx)
}

// unscoped holds each manager's unfiltered watch cache while the manager
// may still start it.
var unscoped = struct {
	sync.Mutex
	caches map[manager.Manager]cache.Cache
}{caches: map[manager.Manager]cache.Cache{}}

// unscopedWatchCache returns mgr's unfiltered watch cache, made on first use.
func unscopedWatchCache(mgr manager.Manager) (cache.Cache, error) {
	unscoped.Lock()
	defer unscoped.Unlock()
	if c, ok := unscoped.caches[mgr]; ok {
		return c, nil
	}
	c, err := newWatchCache(mgr, cache.Options{}, func() {
		unscoped.Lock()
		defer unscoped.Unlock()
		delete(unscoped.caches, mgr)
	})
	if err != nil {
		return nil, err
	}
	unscoped.caches[mgr] = c
	return c, nil
}

// newWatchCache returns a cache that reaches the API server through the
// manager's client configuration, without managed fields: unfiltered, or
// restricted by opts' namespaces and selectors. stopped, when not nil, runs
// once the cache has stopped.
func newWatchCache(mgr manager.Manager, opts cache.Options, stopped func()) (cache.Cache, error) {
	opts.HTTPClient = mgr.GetHTTPClient()
	opts.Scheme = mgr.GetScheme()
	opts.Mapper = mgr.GetRESTMapper()
	opts.DefaultTransform = compactWatched
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("cache for watched kinds: %w", err)
	}
	if err := mgr.Add(watchCache{Cache: c, stopped: stopped}); err != nil {
		return nil, fmt.Errorf("add cache for watched kinds: %w", err)
	}
	return c, nil
}

// ClientOptions returns manager client options under which unstructured
// objects (kinds profilekit has no Go types for, such as PodDefaults) are read
// through the cache too, so that a resync reads nothing from the API server.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{Unstructured: true}}
}

// RateLimited returns a copy of cfg whose clients all draw from one token
// bucket of qps requests per second with burst: client-go otherwise gives
// every client built from a config, one per API group and version, a
// limiter of its own, so that a host writing to ten groups would send up to
// ten times the rate it was given. A qps of 0 or less leaves cfg's limits.
func RateLimited(cfg *rest.Config, qps float32, burst int) *rest.Config {
	rc := rest.CopyConfig(cfg)
	if qps <= 0 {
		return rc
	}
	rc.QPS, rc.Burst = qps, max(burst, 1)
	rc.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(rc.QPS, rc.Burst)
	return rc
}
