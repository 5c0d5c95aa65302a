package reconcilers

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/profilekit/profilekit/plugins"
)

// cachedPolicy is a NetworkPolicy as the API server returns it, with a
// managed-fields entry of ours and one of someone else's. Every call
// allocates its strings anew, as decoding does.
func cachedPolicy(profile string) *networkingv1.NetworkPolicy {
	fresh := func(s string) string { return string([]byte(s)) }
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name: fresh("default-deny"), Namespace: fresh(profile), UID: types.UID("u-" + profile),
			Labels:      plugins.OwnershipLabels(fresh("network"), fresh(profile)),
			Annotations: map[string]string{fresh(plugins.AnnotationAppliedHash): fresh("0123456789abcdef")},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: fresh("kubeflow.org/v1"), Kind: fresh("Profile"), Name: fresh(profile), UID: types.UID("p-" + profile),
			}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: fresh(plugins.FieldManagerFor("network")), Operation: metav1.ManagedFieldsOperationApply, APIVersion: fresh("networking.k8s.io/v1"),
					FieldsType: fresh("FieldsV1"), FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:podSelector":{}}}`)}},
				{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:extra":{}}}}`)}},
			},
		},
	}
}

func sameBytes(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// compact keeps the object's content but our managed fields, and makes two
// Profiles' objects share the strings they repeat.
func TestCompactSharesRepeatedStrings(t *testing.T) {
	a, b := cachedPolicy("team-a"), cachedPolicy("team-b")
	want := a.DeepCopy()
	want.ManagedFields = append(want.ManagedFields[:1:1], othersOwnFields)
	for _, obj := range []runtime.Object{a, b} {
		if _, err := compact(obj); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("compact changed the object (-want +got):\n%s", diff)
	}
	for _, key := range []string{plugins.LabelManagedBy, plugins.LabelPlugin} {
		if !sameBytes(a.Labels[key], b.Labels[key]) {
			t.Errorf("label %s: the two objects hold separate copies of %q", key, a.Labels[key])
		}
	}
	if !sameBytes(a.OwnerReferences[0].APIVersion, b.OwnerReferences[0].APIVersion) ||
		!sameBytes(a.ManagedFields[0].Manager, b.ManagedFields[0].Manager) {
		t.Error("owner references or managed fields hold separate copies")
	}
	if &a.ManagedFields[0].FieldsV1.Raw[0] != &b.ManagedFields[0].FieldsV1.Raw[0] {
		t.Error("equal managed-fields sets hold separate copies")
	}
	if sameBytes(a.Namespace, b.Namespace) {
		t.Error("different namespaces share bytes")
	}
}

// Unstructured objects (kinds without Go types) are compacted too.
func TestCompactUnstructured(t *testing.T) {
	mk := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubeflow.org/v1alpha1", "kind": "PodDefault",
			"metadata": map[string]any{"name": "access-ml-pipeline", "namespace": "team-a",
				"labels": map[string]any{string([]byte("profilekit.dev/plugin")): string([]byte("notebook"))}},
			"spec": map[string]any{"desc": string([]byte("Allow access to Kubeflow Pipelines"))},
		}}
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "other", Operation: metav1.ManagedFieldsOperationUpdate}})
		return u
	}
	a, b := mk(), mk()
	want := mk()
	want.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "others"}})
	for _, obj := range []*unstructured.Unstructured{a, b} {
		if _, err := compact(obj); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want.Object, a.Object); diff != "" {
		t.Errorf("compact changed the object (-want +got):\n%s", diff)
	}
	da, _, _ := unstructured.NestedString(a.Object, "spec", "desc")
	db, _, _ := unstructured.NestedString(b.Object, "spec", "desc")
	if !sameBytes(da, db) {
		t.Error("the two objects hold separate copies of spec.desc")
	}
	if reflect.ValueOf(a.Object["spec"]).Pointer() != reflect.ValueOf(b.Object["spec"]).Pointer() {
		t.Error("the two objects hold separate copies of an equal spec")
	}
	if reflect.ValueOf(a.Object["metadata"]).Pointer() == reflect.ValueOf(b.Object["metadata"]).Pointer() {
		t.Error("the two objects share their metadata, which holds what is theirs alone")
	}
}

// Equal label and annotation maps, owner references and managed fields are
// held once, whichever object brought them; unequal ones stay apart, and so
// do annotations with the same keys and other values.
func TestCompactSharesEqualMaps(t *testing.T) {
	mapOf := func(m map[string]string) uintptr { return reflect.ValueOf(m).Pointer() }
	a, a2, b := cachedPolicy("team-a"), cachedPolicy("team-a"), cachedPolicy("team-b")
	a2.Name = "allow-monitoring"
	b.Annotations[plugins.AnnotationAppliedHash] = "fedcba9876543210"
	want := []*networkingv1.NetworkPolicy{a.DeepCopy(), a2.DeepCopy(), b.DeepCopy()}
	for i, obj := range []*networkingv1.NetworkPolicy{a, a2, b} {
		if _, err := compact(obj); err != nil {
			t.Fatal(err)
		}
		want[i].ManagedFields = append(want[i].ManagedFields[:1:1], othersOwnFields)
		if diff := cmp.Diff(want[i], obj); diff != "" {
			t.Errorf("compact changed %s/%s (-want +got):\n%s", obj.Namespace, obj.Name, diff)
		}
	}
	if mapOf(a.Labels) != mapOf(a2.Labels) || mapOf(a.Annotations) != mapOf(a2.Annotations) {
		t.Error("two objects of one Profile hold separate copies of equal labels or annotations")
	}
	if &a.OwnerReferences[0] != &a2.OwnerReferences[0] || &a.ManagedFields[0] != &a2.ManagedFields[0] {
		t.Error("two objects of one Profile hold separate copies of equal owner references or managed fields")
	}
	if &a.OwnerReferences[0] == &b.OwnerReferences[0] {
		t.Error("owner references to different Profiles share one slice")
	}
	if mapOf(a.Labels) == mapOf(b.Labels) {
		t.Error("labels naming different Profiles share one map")
	}
	if mapOf(a.Annotations) == mapOf(b.Annotations) {
		t.Error("annotations with different hashes share one map")
	}
	// A watched copy of an object shares the maps of the owned one.
	w := cachedPolicy("team-a")
	if _, err := compactWatched(w); err != nil {
		t.Fatal(err)
	}
	if mapOf(w.Labels) != mapOf(a.Labels) {
		t.Error("the watched copy holds its labels apart from the cached one")
	}
}

// Equal parts of typed bodies are held once; a part that differs is not
// shared, and the objects read as they came.
func TestCompactSharesEqualBodies(t *testing.T) {
	limits := func(cpu string) *corev1.LimitRange {
		return &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:    corev1.LimitTypeContainer,
			Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}}
	}
	a, b, c := limits("500m"), limits("500m"), limits("2")
	want := []*corev1.LimitRange{a.DeepCopy(), b.DeepCopy(), c.DeepCopy()}
	for i, obj := range []*corev1.LimitRange{a, b, c} {
		if _, err := compact(obj); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[i], obj); diff != "" {
			t.Errorf("compact changed a LimitRange (-want +got):\n%s", diff)
		}
	}
	if &a.Spec.Limits[0] != &b.Spec.Limits[0] {
		t.Error("two LimitRanges hold separate copies of equal limits")
	}
	if &a.Spec.Limits[0] == &c.Spec.Limits[0] {
		t.Error("different limits share one slice")
	}
	// A reader gets a copy of its own: writing to it changes no cached object.
	got := a.DeepCopy()
	got.Spec.Limits[0].Type = corev1.LimitTypePod
	if b.Spec.Limits[0].Type != corev1.LimitTypeContainer {
		t.Error("writing to a copy changed a cached object")
	}
}

// A watch-list sync gives each object to the transform twice: once as the
// reflector collects the initial events, once more when it replaces the
// store's content. The second pass meets values held for every object
// that shares them, so it must write nothing there: another informer's
// reader may be copying them at that moment. compact and compactWatched
// are run twice over objects whose parts are held, with and without the
// held sets started afresh (what an object holds is then added again),
// while a reader copies another object that holds the same parts: the race
// detector (make test) reports any write, and the parts must not change.
func TestCompactTwiceWritesNothingShared(t *testing.T) {
	for _, transform := range []struct {
		name string
		fn   func(any) (any, error)
	}{{"compact", compact}, {"compactWatched", compactWatched}} {
		t.Run(transform.name, func(t *testing.T) {
			other := cachedPolicy("team-twice")
			if _, err := transform.fn(other); err != nil {
				t.Fatal(err)
			}
			snapshot := other.DeepCopy()
			refs := &other.OwnerReferences[0]
			var fields *metav1.FieldsV1
			if len(other.ManagedFields) > 0 {
				fields = other.ManagedFields[0].FieldsV1
			}
			for _, fresh := range []bool{false, true} {
				obj := cachedPolicy("team-twice")
				if _, err := transform.fn(obj); err != nil {
					t.Fatal(err)
				}
				if fresh {
					ownerRefs.mu.Lock()
					ownerRefs.values = nil
					ownerRefs.mu.Unlock()
					entries.mu.Lock()
					entries.values = nil
					entries.mu.Unlock()
				}
				read := make(chan *networkingv1.NetworkPolicy)
				go func() { read <- other.DeepCopy() }()
				if _, err := transform.fn(obj); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(snapshot, <-read); diff != "" {
					t.Errorf("fresh sets %v: a reader copied another object while the second pass ran (-before +read):\n%s", fresh, diff)
				}
				if diff := cmp.Diff(snapshot, other); diff != "" {
					t.Errorf("fresh sets %v: the second pass changed another object (-before +after):\n%s", fresh, diff)
				}
				if &other.OwnerReferences[0] != refs {
					t.Errorf("fresh sets %v: the other object's owner references moved", fresh)
				}
				if len(other.ManagedFields) > 0 && other.ManagedFields[0].FieldsV1 != fields {
					t.Errorf("fresh sets %v: the second pass wrote into the managed fields the other object holds", fresh)
				}
				if diff := cmp.Diff(snapshot.Spec, obj.Spec); diff != "" {
					t.Errorf("fresh sets %v: the object twice compacted reads differently (-want +got):\n%s", fresh, diff)
				}
			}
		})
	}
}
