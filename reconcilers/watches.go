package reconcilers

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// setupWatches starts the caches of the definition's Watches and adds their
// sources to b. Unscoped watches share one unfiltered cache, the same for
// every plugin of the manager, so that two plugins that watch a kind
// share its informer (one list, one watch); a scoped watch
// gets one cache per scope, each restricted to its namespace, name and
// labels, so that nothing else of the kind reaches memory.
func (r *Reconciler) setupWatches(mgr manager.Manager, b *builder.TypedBuilder[reconcile.Request]) error {
	w := &watchedReader{scheme: r.scheme, unscoped: map[schema.GroupVersionKind]bool{}}
	for _, watch := range r.def.Watches {
		if watch.Object == nil || (watch.Profiles == nil && watch.Carries == nil) {
			return fmt.Errorf("a watch needs an object and a map to Profiles")
		}
		gvk, err := apiutil.GVKForObject(watch.Object, r.scheme)
		if err != nil {
			return fmt.Errorf("watched object: %w", err)
		}
		m := byName(watch.Profiles)
		if watch.Carries != nil {
			m = r.carriers(watch.Carries)
		}
		h := r.wakes.enqueued(triggerWatched+gvk.Kind, handler.EnqueueRequestsFromMapFunc(r.concerned(m)))
		changed := r.changed(watch)
		if watch.Scopes == nil {
			if w.all == nil {
				c, err := unscopedWatchCache(mgr)
				if err != nil {
					return err
				}
				w.all = c
			}
			w.unscoped[gvk] = true
			b.WatchesRawSource(source.Kind(w.all, watch.Object, h, changed))
			continue
		}
		for _, s := range watch.Scopes(r.hostConfig) {
			if s.Namespace == "" {
				return fmt.Errorf("a scope of the watch on %s has no namespace", gvk.Kind)
			}
			nc := cache.Config{LabelSelector: s.Labels}
			if s.Name != "" {
				nc.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.Name)
			}
			c, err := newWatchCache(mgr, cache.Options{DefaultNamespaces: map[string]cache.Config{s.Namespace: nc}}, nil)
			if err != nil {
				return err
			}
			w.scoped = append(w.scoped, scopedCache{gvk: gvk, scope: s, cache: c})
			b.WatchesRawSource(source.Kind(c, watch.Object, h, changed))
		}
	}
	r.watched = w
	return nil
}

// carriers maps a watched object to the Profiles the plugin serves whose
// config carries it, asking carries for each cached Profile in the shard.
func (r *Reconciler) carriers(carries func(client.Object, *kubeflowv1.Profile, any) bool) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list kubeflowv1.ProfileList
		if err := r.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "list Profiles for a watched object", "plugin", r.def.Kind())
			return nil
		}
		var reqs []reconcile.Request
		for i := range list.Items {
			p := &list.Items[i]
			if !p.DeletionTimestamp.IsZero() || !r.shard.Matches(labels.Set(p.Labels)) || !r.Applies(p) {
				continue
			}
			cfg, err := r.decode(r.settingsFor(p), p)
			if err != nil || !carries(o, p, cfg) {
				continue
			}
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
		return reqs
	}
}

// scopedCache is the cache of one scope of a scoped watch.
type scopedCache struct {
	gvk   schema.GroupVersionKind
	scope plugins.Scope
	cache cache.Cache
}

// watchedReader serves Request.Watched: unscoped kinds from the shared
// cache, scoped kinds from the caches of the scopes that cover a read. An
// object outside every scope is not found.
type watchedReader struct {
	scheme   *runtime.Scheme
	all      cache.Cache
	unscoped map[schema.GroupVersionKind]bool
	scoped   []scopedCache
}

var _ client.Reader = (*watchedReader)(nil)

// Get reads obj from the first scope that holds it.
func (w *watchedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return err
	}
	if w.unscoped[gvk] {
		return w.all.Get(ctx, key, obj, opts...)
	}
	for _, s := range w.scoped {
		if s.gvk != gvk || s.scope.Namespace != key.Namespace || (s.scope.Name != "" && s.scope.Name != key.Name) {
			continue
		}
		err := s.cache.Get(ctx, key, obj, opts...)
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)}, key.Name)
}

// List gathers the objects of every scope that covers the list's namespace,
// each once.
func (w *watchedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	listGVK, err := apiutil.GVKForObject(list, w.scheme)
	if err != nil {
		return err
	}
	gvk := listGVK.GroupVersion().WithKind(strings.TrimSuffix(listGVK.Kind, "List"))
	if w.unscoped[gvk] {
		return w.all.List(ctx, list, opts...)
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	var items []runtime.Object
	seen := map[types.NamespacedName]bool{}
	for _, s := range w.scoped {
		if s.gvk != gvk || (lo.Namespace != "" && lo.Namespace != s.scope.Namespace) {
			continue
		}
		part, ok := list.DeepCopyObject().(client.ObjectList)
		if !ok {
			return fmt.Errorf("%T is not a list", list)
		}
		if err := s.cache.List(ctx, part, opts...); err != nil {
			return err
		}
		got, err := meta.ExtractList(part)
		if err != nil {
			return err
		}
		for _, it := range got {
			o, ok := it.(client.Object)
			if !ok {
				continue
			}
			k := client.ObjectKeyFromObject(o)
			if !seen[k] {
				seen[k] = true
				items = append(items, it)
			}
		}
	}
	return meta.SetList(list, items)
}
