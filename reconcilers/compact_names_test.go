package reconcilers

import (
	"maps"
	"reflect"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/profilekit/profilekit/plugins"
)

// An object compact is done with comes back as it is (a watch-list sync
// hands each object to the transform twice); one decoded anew, equal to it,
// is compacted, and so is the same object once the held sets have started
// afresh.
func TestCompactSkipsWhatItIsDoneWith(t *testing.T) {
	unstructuredPolicy := func() *unstructured.Unstructured {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cachedPolicy("team-skip"))
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: content}
	}
	for _, tc := range []struct {
		name string
		// fresh returns an object as decoded; relabel gives obj a label
		// map equal to its own but not held, which only a compaction
		// replaces with the held one; labels returns obj's label map.
		fresh   func() metav1.Object
		relabel func(obj metav1.Object)
		labels  func(obj metav1.Object) uintptr
	}{{
		name:    "typed",
		fresh:   func() metav1.Object { return cachedPolicy("team-skip") },
		relabel: func(obj metav1.Object) { obj.SetLabels(maps.Clone(obj.GetLabels())) },
		labels:  func(obj metav1.Object) uintptr { return reflect.ValueOf(obj.GetLabels()).Pointer() },
	}, {
		name: "metadata only",
		fresh: func() metav1.Object {
			p := cachedPolicy("team-skip")
			return &metav1.PartialObjectMetadata{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta}
		},
		relabel: func(obj metav1.Object) { obj.SetLabels(maps.Clone(obj.GetLabels())) },
		labels:  func(obj metav1.Object) uintptr { return reflect.ValueOf(obj.GetLabels()).Pointer() },
	}, {
		name:  "unstructured",
		fresh: func() metav1.Object { return unstructuredPolicy() },
		relabel: func(obj metav1.Object) {
			meta := obj.(*unstructured.Unstructured).Object["metadata"].(map[string]any)
			meta["labels"] = maps.Clone(meta["labels"].(map[string]any))
		},
		labels: func(obj metav1.Object) uintptr {
			meta := obj.(*unstructured.Unstructured).Object["metadata"].(map[string]any)
			return reflect.ValueOf(meta["labels"]).Pointer()
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.fresh()
			if _, err := compact(obj); err != nil {
				t.Fatal(err)
			}
			held := tc.labels(obj)
			tc.relabel(obj)
			if _, err := compact(obj); err != nil {
				t.Fatal(err)
			}
			if tc.labels(obj) == held {
				t.Error("compact compacted again an object it was done with")
			}

			again := tc.fresh()
			if _, err := compact(again); err != nil {
				t.Fatal(err)
			}
			if tc.labels(again) != held {
				t.Error("an object decoded anew was not compacted: it does not share the held labels")
			}

			stringMaps.mu.Lock()
			stringMaps.values = nil
			stringMaps.mu.Unlock()
			entries.mu.Lock()
			entries.values = nil
			entries.mu.Unlock()
			trees.held.mu.Lock()
			trees.held.values = nil
			trees.held.mu.Unlock()
			if _, err := compact(obj); err != nil {
				t.Fatal(err)
			}
			if _, err := compact(again); err != nil {
				t.Fatal(err)
			}
			if tc.labels(obj) != tc.labels(again) {
				t.Error("after the held sets started afresh, the objects were not compacted again: they do not share their labels")
			}
		})
	}
}

// BenchmarkCompactAgain times the transform's second pass over an object
// it is done with, typed and unstructured, against the steps that pass ran
// before it returned such objects as they are, in the same run.
func BenchmarkCompactAgain(b *testing.B) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cachedPolicy("team-bench"))
	if err != nil {
		b.Fatal(err)
	}
	typed, decoded := cachedPolicy("team-bench"), &unstructured.Unstructured{Object: content}
	for _, tc := range []struct {
		name  string
		obj   metav1.Object
		steps func()
	}{
		{"typed", typed, func() { keepOwnManagedFields(typed); internMeta(typed); shareBody(typed) }},
		{"unstructured", decoded, func() { keepOwnManagedFields(decoded); decoded.Object = compactUnstructured(decoded.Object) }},
	} {
		if _, err := compact(tc.obj); err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name+"/steps", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tc.steps()
			}
		})
		b.Run(tc.name+"/returned", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := compact(tc.obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A tenant who names a Profile so that its strings, run together, read as
// another tenant's ("ab" with UID "c-1" against "a" with UID "bc-1") never
// gets that tenant's labels or owner reference from the shared sets: an
// owner reference decides whose an object is, and a label which pass
// prunes it.
func TestCompactKeepsCraftedNamesApart(t *testing.T) {
	obj := func(profile, uid string) *networkingv1.NetworkPolicy {
		p := cachedPolicy(profile)
		p.OwnerReferences[0].Name, p.OwnerReferences[0].UID = profile, types.UID(uid)
		return p
	}
	victim, crafted := obj("a", "bc-1"), obj("ab", "c-1")
	for _, o := range []*networkingv1.NetworkPolicy{victim, crafted} {
		if _, err := compact(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		o            *networkingv1.NetworkPolicy
		profile, uid string
	}{{victim, "a", "bc-1"}, {crafted, "ab", "c-1"}} {
		if got := tc.o.Labels[plugins.LabelProfile]; got != tc.profile {
			t.Errorf("Profile %s's object is labelled for %q", tc.profile, got)
		}
		if r := tc.o.OwnerReferences[0]; r.Name != tc.profile || string(r.UID) != tc.uid {
			t.Errorf("Profile %s's object is owned by %s/%s", tc.profile, r.Name, r.UID)
		}
	}
}
