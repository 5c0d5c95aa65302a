package plugins

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Foreign names an object that a plugin does not own but on which it owns
// single annotation keys, such as the default-editor ServiceAccount that the
// core plugin or the upstream controller makes: cloud identity plugins put
// their role annotation there. The plugin never creates, updates or deletes
// such an object, and never writes any other field of it.
type Foreign struct {
	// GVK is the object's kind.
	GVK schema.GroupVersionKind
	// Namespace and Name identify the object.
	Namespace string
	Name      string
}

// String renders the object as "ServiceAccount ns/name".
func (f Foreign) String() string { return fmt.Sprintf("%s %s/%s", f.GVK.Kind, f.Namespace, f.Name) }

// ForeignMissingError says that the object a plugin annotates does not exist
// (yet). It is not terminal: whoever makes the object will, and the plugin
// tries again.
type ForeignMissingError struct {
	// Object is the missing object.
	Object Foreign
}

// Error names the missing object and who makes it.
func (e *ForeignMissingError) Error() string {
	return fmt.Sprintf("%s does not exist yet; it is made by the core plugin or the upstream controller", e.Object)
}

// Annotate makes the annotations in want hold on obj, owned by the plugin's
// field manager through server-side apply of those keys alone. Other
// annotations on the object, hand-written or another manager's, stay as they
// are; a key of want that another manager set is taken over (forced), since
// the plugin's configuration decides its value. Keys the plugin applied before
// and that want no longer holds are removed by the server, because they leave
// the plugin's applied configuration.
//
// live reads the object's metadata; it sends nothing when live already holds
// every key of want with its value. An object that does not exist is a
// *ForeignMissingError, and is never created: the apply carries the live
// object's UID, which the server refuses for an object of that name that is
// missing or was made again since the read. On a recorder Annotate records the
// partial object it would apply and reads nothing.
func (a *Applier) Annotate(ctx context.Context, live client.Reader, obj Foreign, want map[string]string) (Change, error) {
	change := Change{Kind: obj.GVK.Kind, Namespace: obj.Namespace, Name: obj.Name}
	if a.recorded != nil {
		*a.recorded = append(*a.recorded, foreignApply(obj, "", want))
		change.Action = Configured
		return change, nil
	}
	m, err := readForeign(ctx, live, obj)
	if err != nil {
		return change, err
	}
	if m == nil {
		return change, &ForeignMissingError{Object: obj}
	}
	have := m.GetAnnotations()
	holds := true
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			holds = false
		}
	}
	if holds {
		change.Action = Unchanged
		return change, nil
	}
	if err := a.applyForeign(ctx, obj, string(m.GetUID()), want); err != nil {
		return change, err
	}
	change.Action = Configured
	return change, nil
}

// Unannotate gives up the plugin's annotations on obj: it applies an empty
// configuration under the plugin's field manager, so that the server removes
// the keys only this manager owned and leaves every other annotation (and a
// key someone else also set) in place. keys are the annotation keys the
// plugin may have applied; when live shows none of them, or the object is
// gone, nothing is sent.
func (a *Applier) Unannotate(ctx context.Context, live client.Reader, obj Foreign, keys ...string) (Change, error) {
	change := Change{Kind: obj.GVK.Kind, Namespace: obj.Namespace, Name: obj.Name}
	if a.recorded != nil {
		return change, nil
	}
	m, err := readForeign(ctx, live, obj)
	if err != nil || m == nil {
		change.Action = Unchanged
		return change, err
	}
	have := m.GetAnnotations()
	present := false
	for _, k := range keys {
		if _, ok := have[k]; ok {
			present = true
		}
	}
	if !present {
		change.Action = Unchanged
		return change, nil
	}
	err = a.applyForeign(ctx, obj, string(m.GetUID()), nil)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or made again since the read: nothing of ours is on it.
		change.Action = Unchanged
		return change, nil
	}
	if err != nil {
		return change, err
	}
	change.Action = Configured
	return change, nil
}

func readForeign(ctx context.Context, r client.Reader, obj Foreign) (*metav1.PartialObjectMetadata, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(obj.GVK)
	err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: obj.Name}, m)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", obj, err)
	}
	return m, nil
}

// foreignApply is the whole configuration the plugin applies to obj: its
// identity and the annotations it owns, nothing else.
func foreignApply(obj Foreign, uid string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GVK)
	u.SetNamespace(obj.Namespace)
	u.SetName(obj.Name)
	if uid != "" {
		u.SetUID(types.UID(uid))
	}
	if len(annotations) > 0 {
		u.SetAnnotations(maps.Clone(annotations))
	}
	return u
}

// applyForeign applies obj's identity and annotations, the plugin's whole
// configuration of it, through ApplyFields: carrying uid, it never creates.
func (a *Applier) applyForeign(ctx context.Context, obj Foreign, uid string, annotations map[string]string) error {
	return ApplyFields(ctx, a.writer, a.kind, types.UID(uid), Encoded(foreignApply(obj, "", annotations).Object))
}
