package apply

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	return a.mark(ctx, live, obj, plugins.Marks{Annotations: want}, false)
}

// Mark makes the labels and annotations of want hold on obj, as Annotate
// does for annotations, and gives up the plugin's other keys there: it
// applies exactly want under the plugin's field manager, so that a key the
// plugin applied before and want no longer holds is removed by the server,
// unless another manager holds it too.
//
// live reads the object's metadata with its managed fields (the API
// server's, or a cache that keeps profilekit's entries). It sends nothing
// when live holds every key of want with its value and the plugin's field
// manager holds exactly the keys of want. A live object without managed
// fields tells only the values: a key the plugin no longer wants is then
// left until the next write. A missing object is a *ForeignMissingError and
// is never created.
func (a *Applier) Mark(ctx context.Context, live client.Reader, obj plugins.Foreign, want plugins.Marks) (plugins.Change, error) {
	return a.mark(ctx, live, obj, want, true)
}

// mark applies want to obj unless live already holds it; exact also asks
// that the plugin's field manager hold no other key.
func (a *Applier) mark(ctx context.Context, live client.Reader, obj plugins.Foreign, want plugins.Marks, exact bool) (plugins.Change, error) {
	change := plugins.Change{Kind: obj.GVK.Kind, Namespace: obj.Namespace, Name: obj.Name}
	m, err := readForeign(ctx, live, obj)
	if err != nil {
		return change, err
	}
	if m == nil {
		return change, &plugins.ForeignMissingError{Object: obj}
	}
	holds := holdsAll(m.GetLabels(), want.Labels) && holdsAll(m.GetAnnotations(), want.Annotations)
	if holds && exact {
		if labels, annotations, known := markedKeys(m, plugins.FieldManagerFor(a.kind)); known {
			holds = sameKeys(labels, want.Labels) && sameKeys(annotations, want.Annotations)
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
	return a.unmark(ctx, live, obj, func(m *metav1.PartialObjectMetadata) bool {
		return slices.ContainsFunc(keys, func(k string) bool { _, ok := m.GetAnnotations()[k]; return ok })
	})
}

// Unmark gives up every label and annotation the plugin holds on obj, as
// Unannotate does: the server removes the keys only this manager owned and
// leaves every other key in place. live reads the object's metadata with
// its managed fields; nothing is sent when they show no key of the
// plugin's field manager, or when the object is gone. A live object without
// managed fields cannot tell, and gets the empty configuration.
func (a *Applier) Unmark(ctx context.Context, live client.Reader, obj plugins.Foreign) (plugins.Change, error) {
	return a.unmark(ctx, live, obj, func(m *metav1.PartialObjectMetadata) bool {
		labels, annotations, known := markedKeys(m, plugins.FieldManagerFor(a.kind))
		return !known || len(labels)+len(annotations) > 0
	})
}

// unmark applies the plugin's empty configuration to obj when held says
// live shows something of the plugin's on it.
func (a *Applier) unmark(ctx context.Context, live client.Reader, obj plugins.Foreign, held func(*metav1.PartialObjectMetadata) bool) (plugins.Change, error) {
	change := plugins.Change{Kind: obj.GVK.Kind, Namespace: obj.Namespace, Name: obj.Name}
	m, err := readForeign(ctx, live, obj)
	if err != nil || m == nil {
		change.Action = plugins.Unchanged
		return change, err
	}
	if !held(m) {
		change.Action = plugins.Unchanged
		return change, nil
	}
	err = a.applyForeign(ctx, obj, string(m.GetUID()), plugins.Marks{})
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

// holdsAll reports whether have holds every key of want with its value.
func holdsAll(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// sameKeys reports whether keys are exactly the keys of want.
func sameKeys(keys []string, want map[string]string) bool {
	return slices.Equal(keys, slices.Sorted(maps.Keys(want)))
}

// markedKeys returns the label and annotation keys that manager's apply
// holds on m, sorted, from its managed fields; known is false when m has no
// managed fields at all (a cache that drops them).
func markedKeys(m *metav1.PartialObjectMetadata, manager string) (labels, annotations []string, known bool) {
	set, known := ownFields(m.GetManagedFields(), manager)
	meta, _ := set["f:metadata"].(map[string]any)
	keys := func(field string) []string {
		node, _ := meta[field].(map[string]any)
		var out []string
		for k := range node {
			if name, ok := strings.CutPrefix(k, "f:"); ok {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	return keys("f:labels"), keys("f:annotations"), known
}

// foreignApply is the whole configuration the plugin applies to obj: its
// identity and the labels and annotations it owns, nothing else.
func foreignApply(obj plugins.Foreign, uid string, marks plugins.Marks) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GVK)
	u.SetNamespace(obj.Namespace)
	u.SetName(obj.Name)
	if uid != "" {
		u.SetUID(types.UID(uid))
	}
	if len(marks.Labels) > 0 {
		u.SetLabels(maps.Clone(marks.Labels))
	}
	if len(marks.Annotations) > 0 {
		u.SetAnnotations(maps.Clone(marks.Annotations))
	}
	return u
}

// applyForeign applies obj's identity, labels and annotations, the
// plugin's whole configuration of it, through Fields: carrying uid, it never
// creates.
func (a *Applier) applyForeign(ctx context.Context, obj plugins.Foreign, uid string, marks plugins.Marks) error {
	return Fields(ctx, a.writer, a.kind, types.UID(uid), Encoded(foreignApply(obj, "", marks).Object))
}
