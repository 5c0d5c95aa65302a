package apply

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/plugins"
)

// createOnly is the resource version a create-first apply carries. An apply
// with a resource version is refused with a Conflict when the object exists
// at any other version, and creates the object when none exists, so an apply
// with this one creates or does nothing: no object will ever reach it (it is
// the largest resource version there is).
const createOnly = "18446744073709551615"

// applyOne writes u unless the live object already holds it.
func (a *Applier) applyOne(ctx context.Context, u *unstructured.Unstructured) (plugins.Change, error) {
	k := keyOf(u)
	change := plugins.Change{Kind: k.gvk.Kind, Namespace: k.namespace, Name: k.name}
	live, err := a.read(ctx, a.reader, k)
	if err != nil {
		return change, fmt.Errorf("read %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
	}
	if live == nil && a.writtenUnseen(u) {
		change.Action = plugins.Unchanged
		return change, nil
	}
	if live == nil && a.adopt {
		if !a.isProfileNamespace(k) {
			return a.adoptOne(ctx, u, change)
		}
		if live, err = a.readSeen(ctx, k); err != nil {
			return change, fmt.Errorf("read %s %s: %w", k.gvk.Kind, k.name, err)
		}
	}
	if live == nil {
		err := a.create(ctx, u)
		if err == nil {
			change.Action = plugins.Created
			log.FromContext(ctx).V(1).Info("applied", "kind", k.gvk.Kind, "object", types.NamespacedName{Namespace: k.namespace, Name: k.name}, "action", plugins.Created)
			return change, nil
		}
		if !apierrors.IsConflict(err) {
			return change, fmt.Errorf("create %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
		}
		// An object of the name exists: ours, written a moment ago and not
		// yet in the cache, or someone else's.
		return a.existing(ctx, u, change)
	}
	return a.update(ctx, u, live, change)
}

// existing writes u over the object of its name that the cache did not
// show and that a write found there: read as it is now, it is written only
// if it is ours (or one to adopt), as update says.
func (a *Applier) existing(ctx context.Context, u *unstructured.Unstructured, change plugins.Change) (plugins.Change, error) {
	k := keyOf(u)
	live, err := a.read(ctx, cmp.Or[client.Reader](a.live, a.reader), k)
	if err != nil {
		return change, fmt.Errorf("read %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
	}
	switch {
	case live == nil && a.live == nil:
		// The cache cannot show it, so it is not one of ours; had
		// it been ours, its arrival in the cache brings us back.
		change.Action = plugins.Skipped
		return change, plugins.Terminalf(plugins.ReasonConflict, "%s %s/%s exists and is not among the objects plugin %s manages for profile %s; left untouched",
			k.gvk.Kind, k.namespace, k.name, a.kind, a.profile.Name)
	case live == nil:
		change.Action = plugins.Skipped
		return change, fmt.Errorf("%s %s/%s exists but was gone when read to check who owns it; not written, will try again", k.gvk.Kind, k.namespace, k.name)
	}
	return a.update(ctx, u, live, change)
}

// update writes u over live, the object of its name as read, if live is
// ours (or one to adopt) and does not hold u yet. The apply carries the
// resourceVersion live was read at: an object that changed since (in a
// cache that is behind, or by another writer a moment ago) refuses it with
// a conflict, and is then read from the API server and judged again, so
// that an object someone took over meanwhile is never written.
func (a *Applier) update(ctx context.Context, u *unstructured.Unstructured, live *liveObject, change plugins.Change) (plugins.Change, error) {
	k := keyOf(u)
	for attempt := 0; ; attempt++ {
		owned := ownedBy(live.Unstructured, a.kind, a.profile.Name)
		adopted := !owned && a.adopt && metadataValue(live.Unstructured, "labels", plugins.LabelManagedBy) == ""
		if !owned && !adopted {
			change.Action = plugins.Skipped
			return change, plugins.Terminalf(plugins.ReasonConflict, "%s %s/%s exists and is not managed by plugin %s for profile %s; left untouched",
				k.gvk.Kind, k.namespace, k.name, a.kind, a.profile.Name)
		}
		if adopted && a.mayAdopt != nil {
			if err := a.mayAdopt(live.Unstructured); err != nil {
				change.Action = plugins.Skipped
				return change, err
			}
		}
		renew := owned && slices.Contains(a.exclusive, k.gvk) && foreign(live.managedFields, plugins.FieldManagerFor(a.kind))
		if !renew && a.inSync(live, u) {
			change.Action = plugins.Unchanged
			return change, nil
		}
		if attempt == 0 {
			if err := a.mayRepair(ctx, live, u); err != nil {
				change.Action = plugins.Skipped
				return change, err
			}
		}
		if renew {
			return a.renew(ctx, live.Unstructured, u, change)
		}
		err := a.send(ctx, atVersion(u, live.GetResourceVersion()))
		if apierrors.IsConflict(err) && attempt == 0 && a.live != nil {
			if live, err = a.read(ctx, a.live, k); err != nil {
				return change, fmt.Errorf("read %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
			}
			if live == nil {
				change.Action = plugins.Skipped
				return change, fmt.Errorf("%s %s/%s was deleted while it was being written; will try again", k.gvk.Kind, k.namespace, k.name)
			}
			continue
		}
		if isImmutable(err) {
			return a.replace(ctx, live.Unstructured, u, change, err)
		}
		if err != nil {
			return change, fmt.Errorf("apply %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
		}
		change.Action = plugins.Configured
		log.FromContext(ctx).V(1).Info("applied", "kind", k.gvk.Kind, "object", types.NamespacedName{Namespace: k.namespace, Name: k.name}, "action", plugins.Configured, "adopted", adopted)
		return change, nil
	}
}

// atVersion returns u to be applied only over the object at version (none:
// u itself), sharing u's content.
func atVersion(u *unstructured.Unstructured, version string) *unstructured.Unstructured {
	if version == "" {
		return u
	}
	obj := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
	obj.Object["metadata"] = maps.Clone(u.Object["metadata"].(map[string]any))
	obj.SetResourceVersion(version)
	return obj
}

// inSync reports whether live, our object, already holds everything u sets:
// the same applied hash, and every field of u still ours. A whole object
// must also hold u's values; one read as metadata only has no body to
// compare, so its managed fields must be there to tell.
func (a *Applier) inSync(live *liveObject, u *unstructured.Unstructured) bool {
	if appliedHashOf(live.Unstructured) != appliedHashOf(u) {
		return false
	}
	ours, known := ownFields(live.managedFields, plugins.FieldManagerFor(a.kind))
	if overtaken(ours, known, u) {
		return false
	}
	if slices.Contains(a.metadata, u.GroupVersionKind()) {
		return known
	}
	return contains(live.Object, u.Object, ours, known && ours != nil)
}

// create sends u as an apply that can only create: it fails with a Conflict,
// and changes nothing, when an object of the name exists.
func (a *Applier) create(ctx context.Context, u *unstructured.Unstructured) error {
	return a.send(ctx, atVersion(u, createOnly))
}
