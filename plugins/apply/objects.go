package apply

// This file holds the objects as the Applier handles them: the empty typed,
// unstructured or metadata-only objects and lists it reads into, the keys
// and order of the objects it writes, the unstructured forms it compares,
// and Encoded for apply configurations without Go types here.

import (
	"cmp"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewMetadata returns an empty object of gvk that reads and watches its
// metadata only, the form in which hosts cache the owned kinds that no
// plugin reads whole (see reconcilers).
func NewMetadata(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// NewMetadataList returns an empty list of gvk's objects, metadata only, as
// NewMetadata returns them.
func NewMetadataList(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// NewObject returns an empty object of gvk: typed when s (which may be nil)
// knows the kind, unstructured otherwise, for kinds without Go types here.
func NewObject(s *runtime.Scheme, gvk schema.GroupVersionKind) (client.Object, error) {
	if s != nil && s.Recognizes(gvk) {
		o, err := s.New(gvk)
		if err != nil {
			return nil, err
		}
		obj, ok := o.(client.Object)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", gvk)
		}
		// A scheme may know the kind as an unstructured or metadata-only
		// type, whose empty object carries no kind of its own.
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		return obj, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// NewList returns an empty list of gvk's objects, typed or unstructured as
// NewObject returns them.
func NewList(s *runtime.Scheme, gvk schema.GroupVersionKind) (client.ObjectList, error) {
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if s != nil && s.Recognizes(listGVK) {
		o, err := s.New(listGVK)
		if err != nil {
			return nil, err
		}
		if l, ok := o.(client.ObjectList); ok {
			return l, nil
		}
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(listGVK)
	return l, nil
}

type objectKey struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

func keyOf(u *unstructured.Unstructured) objectKey {
	return objectKey{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), name: u.GetName()}
}

// compareKeys orders cluster-scoped objects (the Profile's namespace) before
// namespaced ones, so that the namespace exists before anything in it.
func compareKeys(a, b objectKey) int {
	return cmp.Or(
		cmp.Compare(min(len(a.namespace), 1), min(len(b.namespace), 1)),
		cmp.Compare(a.gvk.Group, b.gvk.Group),
		cmp.Compare(a.gvk.Kind, b.gvk.Kind),
		cmp.Compare(a.namespace, b.namespace),
		cmp.Compare(a.name, b.name),
	)
}

func toUnstructured(ac runtime.ApplyConfiguration) (*unstructured.Unstructured, error) {
	data, err := encodeDesired(ac)
	if err != nil {
		return nil, fmt.Errorf("encode desired object: %w", err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		return nil, fmt.Errorf("decode desired object: %w", err)
	}
	return u, nil
}

func asUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// encodeDesired encodes ac. The value inside Encoded is encoded directly:
// through encoded's MarshalJSON, the encoder would scan and compact its
// bytes once more, a fifth of the cost of an Istio object, for JSON that is
// decoded a moment later anyway.
func encodeDesired(ac runtime.ApplyConfiguration) ([]byte, error) {
	if e, ok := ac.(encoded); ok {
		return json.Marshal(e.v)
	}
	return json.Marshal(ac)
}

// Encoded lets the Applier take any value that encodes to an object's JSON,
// such as Istio's generated apply configurations, which lack the marker
// method of runtime.ApplyConfiguration. The Applier only encodes it.
func Encoded(v any) runtime.ApplyConfiguration { return encoded{v} }

type encoded struct{ v any }

// IsApplyConfiguration marks encoded as an apply configuration.
func (encoded) IsApplyConfiguration() {}

// MarshalJSON encodes the wrapped value.
func (e encoded) MarshalJSON() ([]byte, error) { return json.Marshal(e.v) }
