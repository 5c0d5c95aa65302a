package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// livePolicy is a NetworkPolicy as a cache returns it: a body, a time, and
// managed fields of ours and someone else's.
func livePolicy() *networkingv1.NetworkPolicy {
	port := intstr.FromInt(8080)
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "allow-web", Namespace: "team", UID: "u1", ResourceVersion: "7",
			CreationTimestamp: metav1.Now(),
			Labels:            plugins.OwnershipLabels("network", "team"),
			Annotations:       map[string]string{plugins.AnnotationAppliedHash: "0123456789abcdef"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: plugins.FieldManagerFor("network"), Operation: metav1.ManagedFieldsOperationApply, APIVersion: "networking.k8s.io/v1",
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:ingress":{},"f:podSelector":{}}}`)}},
				{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:extra":{}}}}`)}},
			},
		},
		Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Port: &port}},
		}}},
	}
}

// A live object read typed, as metadata or unstructured holds the managed
// fields as read, and the rest of the object as its unstructured form does.
func TestLiveObjectKeepsManagedFieldsApart(t *testing.T) {
	typed := livePolicy()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	want := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(content)}
	wantFields := want.GetManagedFields()
	unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")

	meta := &metav1.PartialObjectMetadata{TypeMeta: typed.TypeMeta, ObjectMeta: *typed.ObjectMeta.DeepCopy()}
	metaContent, err := runtime.DefaultUnstructuredConverter.ToUnstructured(meta.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(metaContent, "metadata", "managedFields")

	for _, tc := range []struct {
		name string
		obj  client.Object
		want map[string]any
	}{
		{"typed", typed.DeepCopy(), want.Object},
		{"metadata only", meta, metaContent},
		{"unstructured", &unstructured.Unstructured{Object: runtime.DeepCopyJSON(content)}, want.Object},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live, err := newLiveObject(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantFields, live.managedFields); diff != "" {
				t.Errorf("managed fields (-read +kept):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, live.Object); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			ours, known := ownFields(live.managedFields, plugins.FieldManagerFor("network"))
			if !known || ours["f:spec"] == nil {
				t.Errorf("ownFields = %v, %v; want our entry's set", ours, known)
			}
		})
	}
}

// BenchmarkLiveObject sets reading a typed object with its managed fields
// kept apart against converting them with the rest, as reads did before,
// in the same run.
func BenchmarkLiveObject(b *testing.B) {
	obj := livePolicy()
	b.Run("converted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			u, _ := asUnstructured(obj.DeepCopy())
			ownFields(u.GetManagedFields(), plugins.FieldManagerFor("network"))
		}
	})
	b.Run("apart", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			live, _ := newLiveObject(obj.DeepCopy())
			ownFields(live.managedFields, plugins.FieldManagerFor("network"))
		}
	})
}
