package apply

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

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
// missing or was made again since the read.
func (a *Applier) Annotate(ctx context.Context, live client.Reader, obj plugins.Foreign, want map[string]string) (plugins.Change, error) {
	change := plugins.Change{Kind: obj.GVK.Kind, Namespace: obj.Namespace, Name: obj.Name}
	m, err := readForeign(ctx, live, obj)
	if err != nil {
		return change, err
	}
	if m == nil {
		return change, &plugins.ForeignMissingError{Object: obj}
	}
	have := m.GetAnnotations()
	holds := true
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			holds = false
		}
	}
	if holds {
		change.Action = plugins.Unchanged
		return change, nil
	}
	if err := a.applyForeign(ctx, obj, string(m.GetUID()), want); err != nil {
		return change, err
	}
	change.Action = plugins.Configured
	return change, nil
}

// Unannotate gives up the plugin's annotations on obj: it applies an empty
// configuration under the plugin's field manager, so that the server removes
// the keys only this manager owned and leaves every other annotation (and a
// key someone else also set) in place. keys are the annotation keys the
// plugin may have applied; when live shows none of them, or the object is
// gone, nothing is sent.
func (a *Applier) Unannotate(ctx context.Context, live client.Reader, obj plugins.Foreign, keys ...string) (plugins.Change, error) {
	change := plugins.Change{Kind: obj.GVK.Kind, Namespace: obj.Namespace, Name: obj.Name}
	m, err := readForeign(ctx, live, obj)
	if err != nil || m == nil {
		change.Action = plugins.Unchanged
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
		change.Action = plugins.Unchanged
		return change, nil
	}
	err = a.applyForeign(ctx, obj, string(m.GetUID()), nil)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or made again since the read: nothing of ours is on it.
		change.Action = plugins.Unchanged
		return change, nil
	}
	if err != nil {
		return change, err
	}
	change.Action = plugins.Configured
	return change, nil
}

func readForeign(ctx context.Context, r client.Reader, obj plugins.Foreign) (*metav1.PartialObjectMetadata, error) {
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
func foreignApply(obj plugins.Foreign, uid string, annotations map[string]string) *unstructured.Unstructured {
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
// configuration of it, through Fields: carrying uid, it never creates.
func (a *Applier) applyForeign(ctx context.Context, obj plugins.Foreign, uid string, annotations map[string]string) error {
	return Fields(ctx, a.writer, a.kind, types.UID(uid), Encoded(foreignApply(obj, "", annotations).Object))
}
