package reconcilers

// This file holds the interning behind the cache's transforms: equal
// strings, typed bodies and decoded JSON values that cached objects of many
// Profiles repeat are held once and shared.

import (
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unique"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

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

// lookup returns the value the set holds under key, if it holds one.
func (h *held[T]) lookup(key [sha256.Size]byte) (T, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.values[key]
	return v, ok
}

// compacted reports whether compact is done with obj: its managed fields
// are the very list that the held set holds for their content. Compact
// leaves every object it is done with so (an object always keeps at least
// one entry), and no object decoded from the API server shares a held list.
// When the set has started afresh since, the object is compacted again.
func compacted(obj metav1.Object) bool {
	list := obj.GetManagedFields()
	if len(list) == 0 {
		return false
	}
	shared, ok := entries.lookup(entriesDigest(list))
	return ok && len(shared) == len(list) && &shared[0] == &list[0]
}

// compactedUnstructured is compacted for an unstructured object, whose
// managed fields the set of decoded JSON values holds.
func compactedUnstructured(obj map[string]any) bool {
	meta, _ := obj["metadata"].(map[string]any)
	list, _ := meta["managedFields"].([]any)
	if len(list) == 0 {
		return false
	}
	key, ok := treeDigest(list)
	if !ok {
		return false
	}
	v, ok := trees.held.lookup(key)
	shared, _ := v.([]any)
	return ok && len(shared) == len(list) && &shared[0] == &list[0]
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
	return stringMaps.hold(mapDigest(m), func() map[string]string {
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

// shareSlice returns the slice equal to l that set holds, adding a copy of
// l, after prepare, when it holds none. Slices are known by key's digest of
// their content. l itself is never written to: it may be a slice the set
// held before it started afresh, which cached objects still share.
func shareSlice[T any](set *held[[]T], l []T, key func([]T) [sha256.Size]byte, prepare func([]T)) []T {
	if len(l) == 0 {
		return l
	}
	return set.hold(key(l), func() []T {
		c := slices.Clone(l)
		prepare(c)
		return c
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
	obj.SetOwnerReferences(shareSlice(ownerRefs, obj.GetOwnerReferences(), ownerRefsDigest, func(refs []metav1.OwnerReference) {
		for i := range refs {
			r := &refs[i]
			r.APIVersion, r.Kind, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Name)
			r.UID = types.UID(intern(string(r.UID)))
		}
	}))
	obj.SetManagedFields(shareSlice(entries, obj.GetManagedFields(), entriesDigest, func(list []metav1.ManagedFieldsEntry) {
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
	shared, _, _ := t.shareDigest(v)
	return shared
}

// shareDigest is share that also returns the digest of v (treeDigest),
// computed once from its children's: false when v holds a value JSON
// cannot encode, which is then left as it is, with what holds it.
func (t *treeSet) shareDigest(v any) (any, [sha256.Size]byte, bool) {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		children := make([]keyedDigest, 0, len(x))
		ok := true
		for k, child := range x {
			k = intern(k)
			shared, d, childOK := t.shareDigest(child)
			m[k] = shared
			children = append(children, keyedDigest{key: k, digest: d})
			ok = ok && childOK
		}
		if !ok {
			return m, [sha256.Size]byte{}, false
		}
		d := mapOfDigests(children)
		return t.held.hold(d, func() any { return m }), d, true
	case []any:
		l := make([]any, len(x))
		digests := make([][sha256.Size]byte, len(x))
		ok := true
		for i, child := range x {
			shared, d, childOK := t.shareDigest(child)
			l[i], digests[i] = shared, d
			ok = ok && childOK
		}
		if !ok {
			return l, [sha256.Size]byte{}, false
		}
		d := listOfDigests(digests)
		return t.held.hold(d, func() any { return l }), d, true
	case string:
		// A string in an interface is boxed: holding the box shares it too.
		s := intern(x)
		d, _ := scalarDigest(s)
		return t.held.hold(d, func() any { return s }), d, true
	}
	d, ok := scalarDigest(v)
	return v, d, ok
}
