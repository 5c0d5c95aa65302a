package apply

// This file holds the Applier's prune: deleting the objects a plugin owns
// for a Profile that are no longer desired.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// prune deletes the plugin's objects for the Profile whose keys are not in
// keep. The outside-state record is Outside's, never pruned.
func (a *Applier) prune(ctx context.Context, keep map[objectKey]bool) (plugins.Result, error) {
	var res plugins.Result
	var errs []error
	// The listed objects are only read, and most passes find nothing
	// stale: a cache hands out its own objects, and the few that are
	// deleted are copied first.
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(a.kind, a.profile.Name)}, client.UnsafeDisableDeepCopy}
	if !a.anyNamespace {
		opts = append(opts, client.InNamespace(plugins.Namespace(a.profile)))
	}
	for _, gvk := range a.owns {
		if gvk == namespaceGVK {
			c, err := a.pruneNamespace(ctx, keep)
			if c.Action != "" {
				res.Add(c)
			}
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		list, err := a.newList(gvk)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := a.reader.List(ctx, list, opts...); err != nil {
			// A kind the API server does not serve (a host's config may
			// name one, see Definition.OwnsFrom) holds nothing to prune.
			if !meta.IsNoMatchError(err) {
				errs = append(errs, fmt.Errorf("list %s: %w", gvk.Kind, err))
			}
			continue
		}
		var stale []client.Object
		err = forEachObject(list, func(obj client.Object) {
			k := objectKey{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()}
			// An object already being deleted (waiting for a finalizer,
			// such as Argo CD's) needs no second delete request.
			if !keep[k] && plugins.IsOwnedBy(obj.GetLabels(), a.kind, a.profile.Name) && obj.GetLabels()[plugins.LabelRole] != plugins.RoleOutsideState &&
				obj.GetDeletionTimestamp() == nil {
				stale = append(stale, obj.DeepCopyObject().(client.Object))
			}
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		slices.SortFunc(stale, func(x, y client.Object) int {
			return cmp.Or(cmp.Compare(x.GetNamespace(), y.GetNamespace()), cmp.Compare(x.GetName(), y.GetName()))
		})
		for _, obj := range stale {
			deleted, err := a.deleteOurs(ctx, gvk, obj)
			if err != nil {
				errs = append(errs, fmt.Errorf("delete %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err))
				continue
			}
			if deleted {
				res.Add(plugins.Change{Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Action: plugins.Deleted})
			}
		}
	}
	return res, errors.Join(errs...)
}

// pruneNamespace deletes the Profile's namespace when it is ours and no longer
// desired. The namespace is the only one a plugin can own, so it is read by
// name rather than listed with every other namespace.
func (a *Applier) pruneNamespace(ctx context.Context, keep map[objectKey]bool) (plugins.Change, error) {
	k := objectKey{gvk: namespaceGVK, name: plugins.Namespace(a.profile)}
	change := plugins.Change{Kind: k.gvk.Kind, Name: k.name}
	if keep[k] || !a.upstream {
		return plugins.Change{}, nil
	}
	live, err := a.get(ctx, k)
	if err != nil || live == nil || !plugins.IsOwnedBy(live.GetLabels(), a.kind, a.profile.Name) {
		if err != nil {
			err = fmt.Errorf("read namespace %s: %w", k.name, err)
		}
		return plugins.Change{}, err
	}
	deleted, err := a.deleteOurs(ctx, namespaceGVK, live.Unstructured)
	if err != nil {
		return change, fmt.Errorf("delete namespace %s: %w", k.name, err)
	}
	if !deleted {
		return plugins.Change{}, nil
	}
	change.Action = plugins.Deleted
	return change, nil
}

// deleteOurs deletes obj, one of ours as a cache showed it, only while it
// is still that object and still ours: the delete carries the uid and the
// resourceVersion it was read at. When the object changed since, it is read
// from the API server and deleted at its new version only if it still
// carries our labels; an object someone took over (relabelled) or made
// again meanwhile is left. It reports whether it deleted the object; one
// already gone counts as deleted.
func (a *Applier) deleteOurs(ctx context.Context, gvk schema.GroupVersionKind, obj client.Object) (bool, error) {
	k := objectKey{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()}
	uid := obj.GetUID()
	for range 3 {
		version := obj.GetResourceVersion()
		err := a.writer.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &version})
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return true, nil
		case !apierrors.IsConflict(err):
			return false, err
		}
		live, err := a.read(ctx, cmp.Or[client.Reader](a.live, a.reader), k)
		switch {
		case err != nil:
			return false, err
		case live == nil:
			return true, nil
		case live.GetUID() != uid || !plugins.IsOwnedBy(live.GetLabels(), a.kind, a.profile.Name) ||
			live.GetLabels()[plugins.LabelRole] == plugins.RoleOutsideState || live.GetDeletionTimestamp() != nil:
			return false, nil
		}
		obj = live.Unstructured
	}
	return false, fmt.Errorf("%s %s/%s kept changing while it was being deleted; will try again", k.gvk.Kind, k.namespace, k.name)
}

// newList returns an empty list of gvk's objects in the form the Applier
// reads them.
func (a *Applier) newList(gvk schema.GroupVersionKind) (client.ObjectList, error) {
	if slices.Contains(a.metadata, gvk) {
		return NewMetadataList(gvk), nil
	}
	return NewList(a.scheme, gvk)
}

func forEachObject(list client.ObjectList, fn func(client.Object)) error {
	if ul, ok := list.(*unstructured.UnstructuredList); ok {
		for i := range ul.Items {
			fn(&ul.Items[i])
		}
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, it := range items {
		if obj, ok := it.(client.Object); ok {
			fn(obj)
		}
	}
	return nil
}
