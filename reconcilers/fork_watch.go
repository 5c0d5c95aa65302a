package reconcilers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// WatchOwned adds to b, a fork's controller builder, one watch per kind that
// defs own: a change to an object one of them labelled (a hand edit, a
// deletion) enqueues the object's Profile, so that the fork's next pass puts
// it back. Kinds no plugin of defs reads whole are watched, and cached, as
// metadata only; the others as the types mgr's scheme knows. Fork's
// SetupWithManager calls it; a fork that uses lone Adapters calls it itself,
// with the same definitions.
func WatchOwned(mgr manager.Manager, b *builder.Builder, defs ...plugins.Definition) error {
	whole := WholeKinds(defs...)
	kinds := map[schema.GroupVersionKind][]string{}
	for _, d := range defs {
		for _, gvk := range d.Owns {
			kinds[gvk] = append(kinds[gvk], d.Kind())
		}
	}
	for _, gvk := range slices.SortedFunc(maps.Keys(kinds), compareGVK) {
		var obj client.Object = apply.NewMetadata(gvk)
		if slices.Contains(whole, gvk) {
			o, err := apply.NewObject(mgr.GetScheme(), gvk)
			if err != nil {
				return err
			}
			obj = o
		}
		b.Watches(obj, handler.EnqueueRequestsFromMapFunc(toLabelledProfile(kinds[gvk])))
	}
	return nil
}

// toLabelledProfile maps an object that one of kinds labelled to its
// Profile.
func toLabelledProfile(kinds []string) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		if l[plugins.LabelManagedBy] != plugins.ManagedByValue || !slices.Contains(kinds, l[plugins.LabelPlugin]) || l[plugins.LabelProfile] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: l[plugins.LabelProfile]}}}
	}
}

func compareGVK(x, y schema.GroupVersionKind) int { return strings.Compare(x.String(), y.String()) }

// upstreamKinds are the kinds the upstream controller itself reads through
// its cache; ForkCacheOptions leaves them whole.
var upstreamKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Namespace"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "ResourceQuota"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "security.istio.io", Version: "v1beta1", Kind: "AuthorizationPolicy"},
	{Group: "security.istio.io", Version: "v1", Kind: "AuthorizationPolicy"},
}

// ForkCacheOptions returns opts, a fork's manager cache options, with every
// kind defs own cached only for the objects profilekit labels, so that a
// cluster's other LimitRanges, NetworkPolicies or ConfigMaps never reach the
// fork's memory. The kinds the upstream controller reads itself (Namespace,
// ServiceAccount, ResourceQuota, RoleBinding, AuthorizationPolicy), the
// kinds a plugin of defs watches (Definition.Watches: it reads them whoever
// wrote them), and kinds opts already configures, are left as they are; so
// must be any kind the fork's own code reads beyond what upstream does,
// which the caller passes as except. opts.Scheme, when set, must know the
// kinds of except and of opts.ByObject; without it client-go's scheme
// serves. An object of ours that the cache cannot show (someone
// else's of the same name) is read from the API server before anything is
// written, so nothing is overwritten either way.
func ForkCacheOptions(opts cache.Options, except []client.Object, defs ...plugins.Definition) (cache.Options, error) {
	skip := slices.Clone(upstreamKinds)
	byObject := maps.Clone(opts.ByObject)
	if byObject == nil {
		byObject = map[client.Object]cache.ByObject{}
	}
	for _, obj := range append(slices.Collect(maps.Keys(byObject)), except...) {
		gvk, err := gvkOf(opts, obj)
		if err != nil {
			return opts, fmt.Errorf("fork cache options: %w", err)
		}
		skip = append(skip, gvk)
	}
	for _, d := range defs {
		// A plugin reads the kinds it watches whole, ours or not.
		for _, w := range d.Watches {
			gvk, err := gvkOf(opts, w.Object)
			if err != nil {
				return opts, fmt.Errorf("fork cache options: plugin %s: %w", d.Kind(), err)
			}
			skip = append(skip, gvk)
		}
	}
	for _, d := range defs {
		for _, gvk := range append(slices.Clone(d.Owns), configMapGVK) {
			if slices.Contains(skip, gvk) {
				continue
			}
			skip = append(skip, gvk)
			byObject[apply.NewMetadata(gvk)] = cache.ByObject{Label: plugins.ManagedSelector()}
		}
	}
	opts.ByObject = byObject
	return opts, nil
}

// gvkOf returns the kind of obj, known to the options' scheme or, when they
// have none yet (the manager sets it later), to client-go's.
func gvkOf(opts cache.Options, obj client.Object) (schema.GroupVersionKind, error) {
	s := opts.Scheme
	if s == nil {
		s = clientgoscheme.Scheme
	}
	return apiutil.GVKForObject(obj, s)
}

// configMapGVK is the kind of every plugin's outside-state record.
var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
