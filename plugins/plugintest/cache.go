package plugintest

// This file holds what a pass reads through req.Client: what a host's
// cache holds, not the whole API server.

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// cached reads from a view (the API server, or a stale one) what a
// host's cache would hold of it: Profiles, and objects that carry
// profilekit's managed-by label (see reconcilers.CacheOptions). Anything
// else, a namespace the upstream controller made or a binding a tenant
// made, is not found, as on a host: a plugin reads those through
// req.Watched or req.Live.
type cached struct {
	view   client.Reader
	scheme *runtime.Scheme
}

var _ client.Reader = cached{}

// inCache reports whether a host's cache holds obj, of kind gvk.
func inCache(gvk schema.GroupVersionKind, obj client.Object) bool {
	return gvk.Group == kubeflowv1.GroupVersion.Group && gvk.Kind == "Profile" ||
		plugins.ManagedSelector().Matches(labels.Set(obj.GetLabels()))
}

func (c cached) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.view.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil || inCache(gvk, obj) {
		return err
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind) + "s"}, key.Name)
}

func (c cached) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.view.List(ctx, list, opts...); err != nil {
		return err
	}
	gvk, err := apiutil.GVKForObject(list, c.scheme)
	if err != nil {
		return err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, it := range items {
		if o, ok := it.(client.Object); ok && inCache(gvk, o) {
			kept = append(kept, it)
		}
	}
	return meta.SetList(list, kept)
}
