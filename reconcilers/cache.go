package reconcilers

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unique"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
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
// Cached objects keep only profilekit's own managed-fields entries, the only
// ones the Applier reads, and Profiles none: managed fields are most of a
// small object's size. A status update sent from a cached Profile leaves
// the stored managed fields as they are, as the API server does for any
// write without them. The strings and, for kinds without Go types, the
// decoded JSON values that objects of many Profiles repeat are held once
// (see compact): cached objects are never written to, readers get copies.
func CacheOptions(shard labels.Selector) cache.Options {
	// A nil selector would take the default (our label), which no Profile has.
	profiles := cache.ByObject{Label: labels.Everything(), Transform: cache.TransformStripManagedFields()}
	if shard != nil {
		profiles.Label = shard
	}
	return cache.Options{
		DefaultLabelSelector: plugins.ManagedSelector(),
		DefaultTransform:     compact,
		ByObject: map[client.Object]cache.ByObject{
			&kubeflowv1.Profile{}: profiles,
		},
	}
}

// compact keeps only profilekit's managed-fields entries of a cached object,
// reduced to the fields they name (plugins.FieldNames), and makes the strings that many cached objects repeat (label keys and
// values, owner references, our managed-fields entry) share one copy.
func compact(in any) (any, error) {
	switch obj := in.(type) {
	case *unstructured.Unstructured:
		keepOwnManagedFields(obj)
		obj.Object = compactUnstructured(obj.Object)
	case *metav1.PartialObjectMetadata:
		// An owned kind cached as metadata only: its type says which kind.
		obj.APIVersion, obj.Kind = intern(obj.APIVersion), intern(obj.Kind)
		keepOwnManagedFields(obj)
		internMeta(obj)
	case metav1.Object:
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

// keepOwnManagedFields drops every managed-fields entry but profilekit's
// plugins' from obj, and the time of those it keeps.
func keepOwnManagedFields(obj metav1.Object) {
	entries := obj.GetManagedFields()
	ours := slices.DeleteFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return !strings.HasPrefix(e.Manager, plugins.FieldManagerPrefix)
	})
	for i := range ours {
		// Nothing reads when a manager last wrote, nor the keys of list
		// items (which name the Profile's UID); without them equal entries
		// of many Profiles' objects can be shared.
		ours[i].Time = nil
		if f := ours[i].FieldsV1; f != nil {
			ours[i].FieldsV1 = &metav1.FieldsV1{Raw: plugins.FieldNames(f.Raw)}
		}
	}
	if len(ours) == 0 {
		// An empty list would read as "no managed fields": keep one entry
		// that says none of them is ours.
		ours = nil
		if len(entries) > 0 {
			ours = []metav1.ManagedFieldsEntry{{Manager: "others"}}
		}
	}
	obj.SetManagedFields(slices.Clip(ours))
}

// intern returns s from a process-wide set of strings, so that equal
// strings held by cached objects share their bytes. The set forgets a
// string once nothing holds its handle, so it does not grow with time; a
// string interned again after that gets a new shared copy.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// internBytes is intern for a byte slice that nobody writes to, such as a
// cached object's managed fields: the slice returned shares the interned
// string's bytes, so it must never be written to. Cached objects are
// never written to; readers get deep copies.
func internBytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	s := intern(string(b))
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// held is a bounded set of values that cached objects share, each known by
// a digest of its content. Cached objects are never written to (readers get
// deep copies), so one value may sit in many. The set holds at most max
// values and starts afresh when full: objects keep what they share, later
// ones share anew.
type held[T any] struct {
	mu     sync.Mutex
	max    int
	values map[[sha256.Size]byte]T
}

// digest is the key of v in a held set: the SHA-256 of kind and v's JSON
// (which lists map keys in order). kind keeps values of different types
// whose JSON is the same apart. It reports false when v does not encode.
func digest(kind string, v any) ([sha256.Size]byte, bool) {
	data, err := json.Marshal(v)
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(data)
	return [sha256.Size]byte(h.Sum(nil)), true
}

// hold returns the value the set holds under key, adding the one fresh
// returns when it holds none.
func (h *held[T]) hold(key [sha256.Size]byte, fresh func() T) T {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v, ok := h.values[key]; ok {
		return v
	}
	if len(h.values) >= h.max || h.values == nil {
		h.values = map[[sha256.Size]byte]T{}
	}
	v := fresh()
	h.values[key] = v
	return v
}

// bodies holds one copy of each part of a typed object's body that cached
// objects share.
var bodies = &held[reflect.Value]{max: 1 << 17}

// shareBody makes the body of a typed Kubernetes object (everything but its
// type and metadata) share the slices, maps and pointers that equal ones of
// other cached objects hold: the limits of a LimitRange, a quota's
// resources, the rules of a NetworkPolicy, most often the same for every
// Profile. It leaves other types alone: protobuf messages, such as Istio's,
// keep state of their own that is written to when they are encoded.
func shareBody(obj any) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct || !strings.HasPrefix(v.Elem().Type().PkgPath(), "k8s.io/api/") {
		return
	}
	v = v.Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.Anonymous || f.Name == "ObjectMeta" {
			continue
		}
		shareFields(v.Field(i))
	}
}

// shareFields replaces every slice, map and pointer in v, or in the structs
// v holds by value, with an equal one that bodies holds.
func shareFields(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				shareFields(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Map, reflect.Pointer:
		if v.IsNil() || !v.CanSet() {
			return
		}
		key, ok := digest(v.Type().String(), v.Interface())
		if !ok {
			return
		}
		// The set holds a copy of the value, not the field: nothing of the
		// object it came from stays reachable through the set.
		shared := bodies.hold(key, func() reflect.Value { return reflect.ValueOf(v.Interface()) })
		if shared.Type() == v.Type() {
			v.Set(shared)
		}
	}
}

// Label and annotation maps, owner references and managed-fields entries
// are the same for many cached objects: every object a plugin writes for a
// Profile carries the same labels and owner reference, and objects rendered
// from one template for many Profiles the same annotations. A small map
// takes a few hundred bytes however few its entries, more than most of the
// strings in it, so equal ones are held once.
var (
	stringMaps = &held[map[string]string]{max: 1 << 17}
	ownerRefs  = &held[[]metav1.OwnerReference]{max: 1 << 16}
	entries    = &held[[]metav1.ManagedFieldsEntry]{max: 1 << 17}
)

// shareMap returns the map equal to m that stringMaps holds, adding a copy
// of m with interned keys (and values, when values is set).
func shareMap(m map[string]string, values bool) map[string]string {
	if m == nil {
		return nil
	}
	key, _ := digest("", m) // a map of strings always encodes
	return stringMaps.hold(key, func() map[string]string {
		out := make(map[string]string, len(m))
		for k, v := range m {
			if values {
				v = intern(v)
			}
			out[intern(k)] = v
		}
		return out
	})
}

// shareSlice returns the slice equal to l that set holds, adding l, after
// prepare, when it holds none. Slices are known by the digest of their JSON.
func shareSlice[T any](set *held[[]T], l []T, prepare func([]T)) []T {
	if len(l) == 0 {
		return l
	}
	key, ok := digest("", l)
	if !ok {
		prepare(l)
		return l
	}
	return set.hold(key, func() []T {
		prepare(l)
		return slices.Clip(l)
	})
}

// internMeta interns the metadata strings that objects of many Profiles
// repeat and shares equal label and annotation maps, owner references and
// managed-fields entries. Annotation values are not interned one by one:
// most are held by a single map.
func internMeta(obj metav1.Object) {
	obj.SetNamespace(intern(obj.GetNamespace()))
	obj.SetLabels(shareMap(obj.GetLabels(), true))
	obj.SetAnnotations(shareMap(obj.GetAnnotations(), false))
	obj.SetOwnerReferences(shareSlice(ownerRefs, obj.GetOwnerReferences(), func(refs []metav1.OwnerReference) {
		for i := range refs {
			r := &refs[i]
			r.APIVersion, r.Kind, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Name)
			r.UID = types.UID(intern(string(r.UID)))
		}
	}))
	obj.SetManagedFields(shareSlice(entries, obj.GetManagedFields(), func(list []metav1.ManagedFieldsEntry) {
		for i := range list {
			e := &list[i]
			e.Manager, e.APIVersion, e.FieldsType = intern(e.Manager), intern(e.APIVersion), intern(e.FieldsType)
			if e.FieldsV1 != nil {
				e.FieldsV1 = &metav1.FieldsV1{Raw: internBytes(e.FieldsV1.Raw)}
			}
		}
	}))
}

// compactUnstructured interns the strings of an unstructured object and
// shares the parts that objects of many Profiles repeat: the body below the
// top level, labels, owner references and managed fields. Decoded JSON is
// a map for every object in it, which makes such kinds several times the
// size of typed ones; most of those maps are the same for every Profile.
func compactUnstructured(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		switch k {
		case "metadata":
			meta, ok := v.(map[string]any)
			if !ok {
				out[k] = v
				continue
			}
			m := make(map[string]any, len(meta))
			for mk, mv := range meta {
				switch mk {
				case "labels", "annotations", "ownerReferences", "managedFields":
					m[intern(mk)] = trees.share(mv)
				default:
					m[intern(mk)] = internValue(mv)
				}
			}
			out[k] = m
		default:
			out[intern(k)] = trees.share(v)
		}
	}
	return out
}

// internValue interns every key and string of a decoded JSON value.
func internValue(v any) any {
	switch x := v.(type) {
	case string:
		return intern(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, child := range x {
			out[intern(k)] = internValue(child)
		}
		return out
	case []any:
		for i := range x {
			x[i] = internValue(x[i])
		}
		return x
	}
	return v
}

// trees holds one copy of each decoded JSON value that cached unstructured
// objects share.
var trees = &treeSet{held: held[any]{max: 1 << 16}}

// treeSet shares equal decoded JSON values between cached objects, at every
// depth: two objects that differ in one field share everything else, down
// to the empty maps that make up most of a managed-fields entry.
type treeSet struct{ held held[any] }

// share returns v built from values the set holds, adding those it lacks.
func (t *treeSet) share(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, child := range x {
			m[intern(k)] = t.share(child)
		}
		return t.hold(m)
	case []any:
		l := make([]any, len(x))
		for i, child := range x {
			l[i] = t.share(child)
		}
		return t.hold(l)
	case string:
		// A string in an interface is boxed: holding the box shares it too.
		return t.hold(intern(x))
	}
	return v
}

// hold returns the value equal to v that the set holds, adding v when it
// holds none. Values are known by the digest of their JSON.
func (t *treeSet) hold(v any) any {
	key, ok := digest("", v)
	if !ok {
		return v
	}
	return t.held.hold(key, func() any { return v })
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
