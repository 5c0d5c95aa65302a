package apply

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// newObject returns an empty object of gvk in the form the Applier reads it.
func (a *Applier) newObject(gvk schema.GroupVersionKind) (client.Object, error) {
	if slices.Contains(a.metadata, gvk) {
		return NewMetadata(gvk), nil
	}
	return NewObject(a.scheme, gvk)
}

// get reads the live object from the cache, then, when the cache has none and
// a live reader is set, from the API server. It returns nil when neither has one.
func (a *Applier) get(ctx context.Context, k objectKey) (*liveObject, error) {
	for _, r := range []client.Reader{a.reader, a.live} {
		if r == nil {
			continue
		}
		live, err := a.read(ctx, r, k)
		if live != nil || err != nil {
			return live, err
		}
	}
	return nil, nil
}

// read reads the object k through r, nil when there is none.
func (a *Applier) read(ctx context.Context, r client.Reader, k objectKey) (*liveObject, error) {
	obj, err := a.newObject(k.gvk)
	if err != nil {
		return nil, err
	}
	var opts []client.GetOption
	if _, ok := obj.(*unstructured.Unstructured); !ok {
		// A typed object read from a cache is then a copy of the cached
		// one's fields only, not of what they point to: newLiveObject
		// changes none of that, and converts the rest before comparing.
		// An unstructured one is its map, which newLiveObject changes.
		opts = append(opts, client.UnsafeDisableDeepCopy)
	}
	err = r.Get(ctx, types.NamespacedName{Namespace: k.namespace, Name: k.name}, obj, opts...)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Typed reads, from an uncached reader in particular, may leave the
	// kind empty; without it the object would never match what we want.
	obj.GetObjectKind().SetGroupVersionKind(k.gvk)
	return newLiveObject(obj)
}

// liveObject is an object as the Applier read it: its content as
// unstructured, for comparison, without its managed fields, which it keeps
// as read. A typed object's managed fields are taken as they are: converted
// to unstructured and back, each set decoded to a map on the way, they
// cost more than the rest of the object.
type liveObject struct {
	*unstructured.Unstructured
	managedFields []metav1.ManagedFieldsEntry
}

// newLiveObject takes obj, which the caller read and no one else holds.
func newLiveObject(obj client.Object) (*liveObject, error) {
	managed := obj.GetManagedFields()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		return &liveObject{Unstructured: u, managedFields: managed}, nil
	}
	obj.SetManagedFields(nil)
	u, err := asUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &liveObject{Unstructured: u, managedFields: managed}, nil
}

// metadataValue returns u's metadata.<field>[key] (field is labels or
// annotations) as read, without the copy of the whole map that GetLabels
// and GetAnnotations make.
func metadataValue(u *unstructured.Unstructured, field, key string) string {
	md, _ := u.Object["metadata"].(map[string]any)
	m, _ := md[field].(map[string]any)
	v, _ := m[key].(string)
	return v
}

// appliedHashOf returns u's applied hash annotation, empty when it has none.
func appliedHashOf(u *unstructured.Unstructured) string {
	return metadataValue(u, "annotations", plugins.AnnotationAppliedHash)
}

// ownedBy is plugins.IsOwnedBy over u's labels as read.
func ownedBy(u *unstructured.Unstructured, kind, profile string) bool {
	return metadataValue(u, "labels", plugins.LabelManagedBy) == plugins.ManagedByValue &&
		metadataValue(u, "labels", plugins.LabelPlugin) == kind &&
		metadataValue(u, "labels", plugins.LabelProfile) == profile
}
