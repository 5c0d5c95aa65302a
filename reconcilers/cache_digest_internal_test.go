package reconcilers

import (
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Values that differ in any one field must be known apart, and values
// built apart but equal must be known alike: a held set that took two
// different values for one would give an object another's labels, owner
// or managed fields.
func TestDigestsTellValuesApart(t *testing.T) {
	yes, no := true, false
	at := metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	later := metav1.NewTime(at.Add(time.Nanosecond))
	maps := []map[string]string{
		{},
		{"a": ""},
		{"": "a"},
		{"a": "bc"},
		{"ab": "c"},
		{"a": "b", "c": "d"},
		{"a": "b", "c": "e"},
		{"a": "b\x00c"},
		{"a": "b", "\x00c": ""},
	}
	ref := metav1.OwnerReference{APIVersion: "kubeflow.org/v1", Kind: "Profile", Name: "team", UID: "u1"}
	with := func(f func(r *metav1.OwnerReference)) []metav1.OwnerReference { return variant(ref, f) }
	refs := [][]metav1.OwnerReference{
		{ref},
		{ref, ref},
		with(func(r *metav1.OwnerReference) { r.APIVersion = "kubeflow.org/v2" }),
		with(func(r *metav1.OwnerReference) { r.Kind = "Other" }),
		with(func(r *metav1.OwnerReference) { r.Name = "team2" }),
		with(func(r *metav1.OwnerReference) { r.UID = "u2" }),
		with(func(r *metav1.OwnerReference) { r.Controller = &yes }),
		with(func(r *metav1.OwnerReference) { r.Controller = &no }),
		with(func(r *metav1.OwnerReference) { r.BlockOwnerDeletion = &yes }),
		with(func(r *metav1.OwnerReference) { r.BlockOwnerDeletion = &no }),
		with(func(r *metav1.OwnerReference) { r.Kind, r.Name = "Profileteam", "" }),
	}
	entry := metav1.ManagedFieldsEntry{Manager: "profilekit-network", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}
	withEntry := func(f func(e *metav1.ManagedFieldsEntry)) []metav1.ManagedFieldsEntry { return variant(entry, f) }
	lists := [][]metav1.ManagedFieldsEntry{
		{entry},
		{entry, entry},
		withEntry(func(e *metav1.ManagedFieldsEntry) { e.Manager = "others" }),
		withEntry(func(e *metav1.ManagedFieldsEntry) { e.Operation = metav1.ManagedFieldsOperationUpdate }),
		withEntry(func(e *metav1.ManagedFieldsEntry) { e.APIVersion = "v2" }),
		withEntry(func(e *metav1.ManagedFieldsEntry) { e.Time = &at }),
		withEntry(func(e *metav1.ManagedFieldsEntry) { e.Time = &later }),
		withEntry(func(e *metav1.ManagedFieldsEntry) { e.FieldsType = "" }),
		withEntry(func(e *metav1.ManagedFieldsEntry) { e.FieldsV1 = nil }),
		withEntry(func(e *metav1.ManagedFieldsEntry) { e.FieldsV1 = &metav1.FieldsV1{} }),
		withEntry(func(e *metav1.ManagedFieldsEntry) { e.FieldsV1 = &metav1.FieldsV1{Raw: []byte{}} }),
		withEntry(func(e *metav1.ManagedFieldsEntry) { e.FieldsV1 = &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)} }),
		withEntry(func(e *metav1.ManagedFieldsEntry) { e.Subresource = "status" }),
	}
	checkApart(t, "map", maps, mapDigest)
	checkApart(t, "owner references", refs, ownerRefsDigest)
	checkApart(t, "managed fields", lists, entriesDigest)
}

// variant returns a list of one copy of base, changed by change.
func variant[T any](base T, change func(*T)) []T {
	change(&base)
	return []T{base}
}

// checkApart checks that every value's digest differs from every other's
// and equals that of a deep copy made apart.
func checkApart[T any](t *testing.T, what string, values []T, digest func(T) [sha256.Size]byte) {
	t.Helper()
	seen := map[[sha256.Size]byte]int{}
	for i, v := range values {
		d := digest(v)
		if j, ok := seen[d]; ok {
			t.Errorf("%s %d (%v) and %d (%v) have one digest", what, j, values[j], i, v)
		}
		seen[d] = i
		if again := digest(deepCopy(v)); again != d {
			t.Errorf("%s %d (%v): a copy has another digest", what, i, v)
		}
	}
}

// deepCopy copies v through reflection, so that no string, slice, map or
// pointer is shared with v.
func deepCopy[T any](v T) T {
	return copyValue(reflect.ValueOf(v)).Interface().(T)
}

func copyValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		return reflect.ValueOf(string([]byte(v.String()))).Convert(v.Type())
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(copyValue(v.Elem()))
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(copyValue(v.Index(i)))
		}
		return c
	case reflect.Map:
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(copyValue(it.Key()), copyValue(it.Value()))
		}
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		for i := range v.NumField() {
			if c.Field(i).CanSet() {
				c.Field(i).Set(copyValue(v.Field(i)))
			}
		}
		return c
	}
	return v
}

// The digests write the fields of owner references and managed-fields
// entries one by one: a field the API adds must be added to them, or two
// values that differ only in it would be taken for one.
func TestDigestsWriteEveryField(t *testing.T) {
	for _, tc := range []struct {
		typ     reflect.Type
		written []string
	}{
		{reflect.TypeFor[metav1.OwnerReference](), []string{"APIVersion", "Kind", "Name", "UID", "Controller", "BlockOwnerDeletion"}},
		{reflect.TypeFor[metav1.ManagedFieldsEntry](), []string{"Manager", "Operation", "APIVersion", "Time", "FieldsType", "FieldsV1", "Subresource"}},
		{reflect.TypeFor[metav1.FieldsV1](), []string{"Raw"}},
		{reflect.TypeFor[metav1.Time](), []string{"Time"}},
	} {
		var fields []string
		for f := range tc.typ.Fields() {
			fields = append(fields, f.Name)
		}
		if !slices.Equal(fields, tc.written) {
			t.Errorf("%s has the fields %v; its digest writes %v: write the new ones", tc.typ, fields, tc.written)
		}
	}
}

func FuzzMapDigest(f *testing.F) {
	f.Add("a", "bc", "ab", "c")
	f.Add("a", "b", "a", "b")
	f.Add("", "", "x", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		a, b := map[string]string{k1: v1}, map[string]string{k2: v2}
		if (mapDigest(a) == mapDigest(b)) != reflect.DeepEqual(a, b) {
			t.Errorf("%q and %q: digests equal = %v, maps equal = %v", a, b, mapDigest(a) == mapDigest(b), reflect.DeepEqual(a, b))
		}
		two := map[string]string{k1: v1, k2: v2}
		if (mapDigest(two) == mapDigest(a)) != reflect.DeepEqual(two, a) {
			t.Errorf("%q and %q: digests equal = %v, maps equal = %v", two, a, mapDigest(two) == mapDigest(a), reflect.DeepEqual(two, a))
		}
	})
}

// BenchmarkDigests sets the digests against the JSON digest they replace,
// in the same run, on the metadata every object a plugin writes carries.
func BenchmarkDigests(b *testing.B) {
	p := cachedPolicy("team-a")
	keepOwnManagedFields(p)
	labels, refs, list := p.Labels, p.OwnerReferences, p.ManagedFields
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			digest("", labels)
			digest("", refs)
			digest("", list)
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			mapDigest(labels)
			ownerRefsDigest(refs)
			entriesDigest(list)
		}
	})
}

// Decoded JSON values that differ anywhere are known apart, equal ones
// alike; an int64 and a float64 of one value are not taken for each other.
func TestTreeDigestTellsValuesApart(t *testing.T) {
	values := []any{
		nil, "", "a", true, false, int64(1), float64(1), int64(0), float64(0.5),
		map[string]any{}, []any{},
		map[string]any{"a": "bc"}, map[string]any{"ab": "c"},
		map[string]any{"a": map[string]any{}}, map[string]any{"a": []any{}},
		map[string]any{"a": nil}, map[string]any{"a": "b", "c": "d"}, map[string]any{"a": "d", "c": "b"},
		[]any{"a", "b"}, []any{"b", "a"}, []any{[]any{"a"}, "b"}, []any{"a", []any{"b"}},
		[]any{map[string]any{"k": int64(1)}}, []any{map[string]any{"k": float64(1)}},
		int(1), json.Number("1"),
	}
	seen := map[[sha256.Size]byte]int{}
	for i, v := range values {
		d, ok := treeDigest(v)
		if !ok {
			t.Fatalf("value %d (%#v) has no digest", i, v)
		}
		if j, dup := seen[d]; dup {
			t.Errorf("values %d (%#v) and %d (%#v) have one digest", j, values[j], i, v)
		}
		seen[d] = i
		if again, _ := treeDigest(copyTree(v)); again != d {
			t.Errorf("value %d (%#v): a copy has another digest", i, v)
		}
		shared, sd, ok := trees.shareDigest(copyTree(v))
		if !ok || sd != d {
			t.Errorf("value %d (%#v): share's digest differs from treeDigest's", i, v)
		}
		if !reflect.DeepEqual(shared, v) {
			t.Errorf("value %d: share returned %#v, want %#v", i, shared, v)
		}
	}
	if _, ok := treeDigest(map[string]any{"a": make(chan int)}); ok {
		t.Error("a value JSON cannot encode has a digest")
	}
}

// copyTree copies a decoded JSON value, strings included.
func copyTree(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, child := range x {
			m[string([]byte(k))] = copyTree(child)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, child := range x {
			l[i] = copyTree(child)
		}
		return l
	case string:
		return string([]byte(x))
	}
	return v
}

// BenchmarkTreeDigests sets the digests a decoded object's share takes,
// built once from its children's, against the JSON digest of every map,
// list and string in it that share took before, in the same run.
func BenchmarkTreeDigests(b *testing.B) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cachedPolicy("team-bench"))
	if err != nil {
		b.Fatal(err)
	}
	var eachJSON func(v any)
	eachJSON = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, child := range x {
				eachJSON(child)
			}
		case []any:
			for _, child := range x {
				eachJSON(child)
			}
		case string:
		default:
			return
		}
		digest("", v)
	}
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			eachJSON(content)
		}
	})
	b.Run("tree", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			treeDigest(content)
		}
	})
}
