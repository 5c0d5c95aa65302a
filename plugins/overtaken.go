package plugins

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// overtaken reports whether another field manager holds a field that desired
// sets and that our manager no longer owns. Server-side apply moves a field to
// whoever changes it, so this notices edits that contains cannot: an item
// added to an atomic list (a subject added to a RoleBinding, a rule added to
// a NetworkPolicy) leaves every item we want in place, but takes the whole
// list from us.
//
// Only paths of plain field names count. Items of keyed lists that others own
// are theirs to keep (our apply would not remove them either), and a changed
// value inside one of our items is already seen by contains. A live object
// without managed fields (a cache that strips them) tells nothing: it is not
// reported as overtaken, so it costs no request.
func overtaken(live, desired *unstructured.Unstructured, manager string) bool {
	entries := live.GetManagedFields()
	if len(entries) == 0 {
		return false
	}
	var ours map[string]any
	for _, e := range entries {
		if isOurs(e, manager) {
			ours = fieldsOf(e)
		}
	}
	if ours == nil {
		// Someone removed our entry; applying puts it back.
		return true
	}
	for _, e := range entries {
		if isOurs(e, manager) || e.Subresource != "" {
			continue
		}
		taken := false
		walkLeaves(fieldsOf(e), nil, func(path []string) {
			if !taken && !reachable(ours, path) && hasPath(desired.Object, path) {
				taken = true
			}
		})
		if taken {
			return true
		}
	}
	return false
}

func isOurs(e metav1.ManagedFieldsEntry, manager string) bool {
	return e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
}

// fieldsOf decodes a managed fields entry's set; an unreadable one is empty.
func fieldsOf(e metav1.ManagedFieldsEntry) map[string]any {
	out := map[string]any{}
	if e.FieldsV1 != nil {
		_ = json.Unmarshal(e.FieldsV1.Raw, &out)
	}
	return out
}

// walkLeaves calls fn with the field names of every leaf of set reached
// through "f:" keys only.
func walkLeaves(set map[string]any, path []string, fn func([]string)) {
	for k, v := range set {
		name, ok := strings.CutPrefix(k, "f:")
		if !ok {
			continue
		}
		p := append(path[:len(path):len(path)], name)
		child, _ := v.(map[string]any)
		if len(child) == 0 {
			fn(p)
			continue
		}
		walkLeaves(child, p, fn)
	}
}

// reachable reports whether set holds path, as a leaf or above other fields.
func reachable(set map[string]any, path []string) bool {
	node := set
	for _, name := range path {
		child, ok := node["f:"+name]
		if !ok {
			return false
		}
		node, _ = child.(map[string]any)
	}
	return true
}

// hasPath reports whether obj has a value at path.
func hasPath(obj map[string]any, path []string) bool {
	var cur any = obj
	for _, name := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[name]; !ok {
			return false
		}
	}
	return true
}
