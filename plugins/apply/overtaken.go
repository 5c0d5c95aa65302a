package apply

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// overtaken reports whether a field that desired sets is no longer ours.
// Server-side apply moves a field to whoever changes it, so this notices
// edits that contains cannot: an item added to an atomic list (a subject
// added to a RoleBinding, a rule added to a NetworkPolicy) leaves every item
// we want in place, but takes the whole list from us.
//
// It reads our own managed-fields entry only, so that a cache may drop every
// other manager's (see reconcilers.CacheOptions): every field our last apply
// set is in that entry, zero values the server then dropped included, until
// another manager takes it or removes it. Lists are checked as a whole: items
// of keyed lists that others own are theirs to keep, and a changed value
// inside one of ours is already seen by contains. A live object without
// managed fields (a cache that strips them) tells nothing: it is not reported
// as overtaken, so it costs no request.
//
// ours and known are what ownFields returned for the live object, which the
// caller reads once for this check and the comparison after it.
func overtaken(ours map[string]any, known bool, desired *unstructured.Unstructured) bool {
	if !known {
		return false
	}
	if ours == nil {
		// Someone removed our entry; applying puts it back.
		return true
	}
	taken := false
	walkDesired(desired.Object, func(path []string) {
		if !taken && !reachable(ours, path) {
			taken = true
		}
	})
	return taken
}

// ownFields returns the set of fields our manager applied to a live object
// with entries for its managed fields, nil when it has managed fields but
// none of ours, and known false when it has no managed fields at all.
func ownFields(entries []metav1.ManagedFieldsEntry, manager string) (set map[string]any, known bool) {
	for _, e := range entries {
		if isOurs(e, manager) {
			return fieldsOf(e), true
		}
	}
	return nil, len(entries) > 0
}

// foreign reports whether a manager other than ours owns fields of an
// object's body or metadata (its status aside, which a subresource's
// managers write).
func foreign(entries []metav1.ManagedFieldsEntry, manager string) bool {
	for _, e := range entries {
		if e.Manager != manager && e.Subresource == "" && e.FieldsV1 != nil && len(e.FieldsV1.Raw) > len("{}") {
			return true
		}
	}
	return false
}

func isOurs(e metav1.ManagedFieldsEntry, manager string) bool {
	return e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
}

// walkDesired calls fn with the path of every field an apply of obj owns:
// each leaf reached through maps (a list, a scalar or an empty map is a
// leaf), with the identity fields (apiVersion, kind, name, namespace), which
// no manager owns, left out.
func walkDesired(obj map[string]any, fn func([]string)) {
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind", "status":
			continue
		case "metadata":
			meta, _ := v.(map[string]any)
			for _, f := range []string{"labels", "annotations", "ownerReferences", "finalizers"} {
				if mv, ok := meta[f]; ok {
					walkValue(mv, []string{"metadata", f}, fn)
				}
			}
			continue
		}
		walkValue(v, []string{k}, fn)
	}
}

func walkValue(v any, path []string, fn func([]string)) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		fn(path)
		return
	}
	for k, child := range m {
		walkValue(child, append(path[:len(path):len(path)], k), fn)
	}
}

// fieldsOf decodes a managed fields entry's set; an unreadable one is empty.
// The set returned may be shared: it is only read.
func fieldsOf(e metav1.ManagedFieldsEntry) map[string]any {
	if e.FieldsV1 == nil {
		return map[string]any{}
	}
	return decodedSets.decode(e.FieldsV1.Raw)
}

// maxDecodedSets bounds how many decoded sets decodedSets keeps.
const maxDecodedSets = 1024

// decodedSets keeps managed-fields sets decoded, by their JSON. A cache that
// holds sets as FieldNames returns them (reconcilers.CacheOptions) has a few
// distinct ones for many objects, so a pass that checks an object in sync
// decodes none. Sets that name keyed items, one object's each, are decoded
// anew once the bound is reached.
var decodedSets setMemo

type setMemo struct {
	sets sync.Map // string(raw) -> map[string]any
	n    atomic.Int64
}

func (m *setMemo) decode(raw []byte) map[string]any {
	if v, ok := m.sets.Load(string(raw)); ok {
		return v.(map[string]any)
	}
	out := map[string]any{}
	_ = json.Unmarshal(raw, &out)
	if m.n.Load() < maxDecodedSets {
		if _, loaded := m.sets.LoadOrStore(string(raw), out); !loaded {
			m.n.Add(1)
		}
	}
	return out
}

// reachable reports whether set holds path, as a leaf or above other fields,
// or holds a leaf above it: an atomic struct (a RoleBinding's roleRef) is
// one leaf in managed fields, however deep the value.
func reachable(set map[string]any, path []string) bool {
	node := set
	for i, name := range path {
		if i > 0 && len(node) == 0 {
			return true
		}
		child, ok := node["f:"+name]
		if !ok {
			return false
		}
		node, _ = child.(map[string]any)
	}
	return true
}

// FieldNames returns the managed-fields set raw (FieldsV1 JSON) reduced to
// what profilekit reads of a set: the fields known by name (the "f:"
// members), at every depth. A node's other members, the items of lists
// and maps known by key, value or index ("k:", "v:", "i:") and ".", are
// folded into one "." member, so that the node still shows it has some.
// Keyed items name values of one object, such as the Profile's UID in an
// owner reference; without them the sets of objects rendered alike for many
// Profiles are the same bytes, which a cache holds once. raw that does not
// decode is returned as it is.
func FieldNames(raw []byte) []byte {
	if out, ok := namedFieldsOf(raw); ok {
		return out
	}
	return fieldNamesDecoded(raw)
}

// fieldNamesDecoded is FieldNames through decoded maps, for any input.
func fieldNamesDecoded(raw []byte) []byte {
	var set map[string]any
	if err := json.Unmarshal(raw, &set); err != nil {
		return raw
	}
	out, err := json.Marshal(namedFields(set))
	if err != nil {
		return raw
	}
	return out
}

func namedFields(node map[string]any) map[string]any {
	out := make(map[string]any, len(node))
	for k, v := range node {
		if !strings.HasPrefix(k, "f:") {
			out["."] = map[string]any{}
			continue
		}
		child, _ := v.(map[string]any)
		out[k] = namedFields(child)
	}
	return out
}
