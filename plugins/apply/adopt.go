package apply

// This file holds how an Applier from Adopting takes over the objects the
// upstream controller made, one request each (see Adopting).

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/plugins"
)

// adoptOne writes u, an object in the Profile's namespace that the cache
// does not hold, by an apply that does not force ownership: it creates the
// object, or takes over one of the name whose fields no other writer holds
// with other values. One the API server refuses is read and judged as any
// object of ours that the cache did not show (see existing).
func (a *Applier) adoptOne(ctx context.Context, u *unstructured.Unstructured, change plugins.Change) (plugins.Change, error) {
	k := keyOf(u)
	start := time.Now()
	answer, err := a.sendApply(ctx, u, false)
	if apierrors.IsConflict(err) {
		// Someone holds a field with another value: a foreign object,
		// or upstream's with other values than ours.
		return a.existing(ctx, u, change)
	}
	if err != nil {
		return change, fmt.Errorf("apply %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
	}
	change.Action = plugins.Created
	if sharedWith(answer, plugins.FieldManagerFor(a.kind)) || answer.CreationTimestamp.Time.Before(start.Truncate(time.Second)) {
		// It was there: upstream's fields are shared with ours now, or
		// it has none of upstream's (an empty ServiceAccount) and is
		// older than the apply.
		change.Action = plugins.Configured
	}
	log.FromContext(ctx).V(1).Info("applied", "kind", k.gvk.Kind, "object", types.NamespacedName{Namespace: k.namespace, Name: k.name}, "action", change.Action, "adopted", change.Action == plugins.Configured)
	return change, nil
}

// sharedWith reports whether obj's fields have a manager other than
// manager: an object that was there before our apply.
func sharedWith(obj client.Object, manager string) bool {
	for _, m := range obj.GetManagedFields() {
		if m.Manager != manager {
			return true
		}
	}
	return false
}

// readSeen returns the object k as the Applier's seen reader shows it,
// metadata only; nil when there is no such reader or it shows none.
func (a *Applier) readSeen(ctx context.Context, k objectKey) (*liveObject, error) {
	if a.seen == nil {
		return nil, nil
	}
	obj := NewMetadata(k.gvk)
	err := a.seen.Get(ctx, types.NamespacedName{Namespace: k.namespace, Name: k.name}, obj)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	obj.SetGroupVersionKind(k.gvk)
	return newLiveObject(obj)
}
