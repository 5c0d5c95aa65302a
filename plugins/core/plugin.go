package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// Plugin makes what the upstream profile controller makes for a Profile.
// Its zero value works. Before any change of a namespace it reads the
// namespace from the API server, through the request's Live reader when the
// host gives one (see Apply).
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// Definition returns the core plugin: its config, the kinds it owns, a
// metadata watch on namespaces (so that a namespace someone else holds is
// seen, and its release wakes the Profile), and Upstream, which lets it write
// the namespace and upstream's names. The watch leaves the namespaces the
// plugin made to the watch on its own objects, which drops the events of
// its own writes, and wakes on the changes of a namespace's metadata that
// mayWrite reads.
func Definition() plugins.Definition {
	ns := apply.NewMetadata(namespaceGVK)
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Owns: []schema.GroupVersionKind{
			namespaceGVK,
			corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
			corev1.SchemeGroupVersion.WithKind("ResourceQuota"),
			rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
			securityv1.SchemeGroupVersion.WithKind("AuthorizationPolicy"),
		},
		Watches: []plugins.Watch{{Object: ns, Profiles: othersNamespace, Changed: metadataChanged}},
		// The labels file is an input from outside the cluster.
		Runner:   watchLabels,
		Upstream: true,
	}
}

// othersNamespace maps a namespace that the plugin did not make for the
// Profile of its name to that Profile. One it made wakes the Profile
// through the watch on its own objects.
func othersNamespace(_ context.Context, o client.Object) []string {
	if plugins.IsOwnedBy(o.GetLabels(), Kind, o.GetName()) {
		return nil
	}
	return []string{o.GetName()}
}

// metadataChanged reports whether an update of a namespace changed what
// the plugin reads of one it did not make: its labels, its annotations
// (the owner's), or its deletion.
func metadataChanged(_ any, before, after client.Object) bool {
	return !maps.Equal(before.GetLabels(), after.GetLabels()) || !maps.Equal(before.GetAnnotations(), after.GetAnnotations()) ||
		!before.GetDeletionTimestamp().Equal(after.GetDeletionTimestamp())
}

// Kind returns "core".
func (Plugin) Kind() string { return Kind }

// Apply writes the namespace and the objects in it. A namespace that exists
// and is not ours stops everything: another owner's is refused, the
// Profile owner's is taken over only with Adopt.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	p := req.Profile
	file, err := ReadLabelsFile(cfg.NamespaceLabelsPath)
	if err != nil {
		return plugins.Result{}, err
	}
	live, err := liveNamespace(ctx, req)
	if errors.Is(err, errNotCached) {
		// The next pass sees it: no failure, no Event, and the condition
		// usually never shows the wait (the StatusWriter gathers it).
		var res plugins.Result
		res.Wait(time.Second, "namespace "+plugins.Namespace(p)+" to reach the host's cache")
		return res, nil
	}
	if err != nil {
		return plugins.Result{}, err
	}
	if err := mayWrite(cfg, p, live); err != nil {
		return plugins.Result{}, err
	}
	var liveLabels map[string]string
	var owned []string
	if live != nil {
		liveLabels = live.GetLabels()
		owned = appliedLabels(live.GetManagedFields(), plugins.FieldManagerFor(Kind))
	}
	labels, remove := NamespaceLabels(DefaultLabels(cfg, file), liveLabels, owned)
	if live != nil && (addsLabels(labels, liveLabels) || len(remove) > 0 || live.GetAnnotations()[AnnotationOwner] != p.Spec.Owner.Name) {
		// A value already there is never changed, and the apply would
		// take over one that someone set since the cache last saw the
		// namespace, or set back one of ours that someone changed since
		// (an apply carries the values of the keys it keeps): before any
		// change of the namespace, look at it as it is now.
		if now, err := reread(ctx, req.Live, plugins.Namespace(p)); err != nil {
			return plugins.Result{}, err
		} else if now != nil {
			liveLabels = now.GetLabels()
			owned = appliedLabels(now.GetManagedFields(), plugins.FieldManagerFor(Kind))
			labels, remove = NamespaceLabels(DefaultLabels(cfg, file), liveLabels, owned)
		}
	}
	// An owner the AuthorizationPolicy cannot admit still gets its
	// namespace, its RBAC and the rest of the policy: buildErr is reported
	// after they are applied.
	desired, buildErr := Build(cfg, p, labels)
	if desired == nil {
		return plugins.Result{}, buildErr
	}
	objects := req.Objects
	if cfg.Adopt {
		a, ok := objects.(adopter)
		if !ok {
			return plugins.Result{}, plugins.Terminalf(plugins.ReasonInvalidConfig, "adopt: the host's objects (%T) cannot take over upstream's objects", objects)
		}
		// The watched namespaces show the namespace as it is, so that it
		// is judged and taken in one request.
		objects = a.Adopting(func(live client.Object) error { return mayAdopt(cfg, p, live) }, req.Watched)
	}
	res, err := objects.Sync(ctx, desired...)
	if err == nil && len(remove) > 0 {
		if err = removeLabels(ctx, req.Client, plugins.Namespace(p), remove); err == nil {
			res.Add(plugins.Change{Kind: "Namespace", Name: plugins.Namespace(p), Action: plugins.Configured})
		}
	}
	return res, errors.Join(err, buildErr)
}

// adopter is the part of the host's Objects that takes over objects the
// upstream controller wrote (apply.Applier.Adopting).
type adopter interface {
	Adopting(may func(live client.Object) error, seen client.Reader) plugins.Objects
}

// addsLabels reports whether labels holds a key that live does not.
func addsLabels(labels, live map[string]string) bool {
	for k := range labels {
		if _, ok := live[k]; !ok {
			return true
		}
	}
	return false
}

// reread returns the namespace named name, its metadata, read through r
// from the API server; nil when it is gone or the host gave no reader
// without a cache (r nil).
func reread(ctx context.Context, r client.Reader, name string) (client.Object, error) {
	if r == nil {
		return nil, nil
	}
	ns := apply.NewMetadata(namespaceGVK)
	err := r.Get(ctx, types.NamespacedName{Name: name}, ns)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read namespace %s: %w", name, err)
	}
	return ns, nil
}

// liveNamespace returns the Profile's namespace, its metadata only (the form
// in which hosts cache it): ours from the client (whose cache keeps our
// objects with their managed fields), anyone's from the watched namespaces.
// Nil when there is none.
func liveNamespace(ctx context.Context, req plugins.Request) (client.Object, error) {
	key := types.NamespacedName{Name: plugins.Namespace(req.Profile)}
	ns := apply.NewMetadata(namespaceGVK)
	err := req.Client.Get(ctx, key, ns)
	if err == nil {
		return ns, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("read namespace %s: %w", key.Name, err)
	}
	if req.Watched == nil {
		return nil, nil
	}
	meta := apply.NewMetadata(namespaceGVK)
	err = req.Watched.Get(ctx, key, meta)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read namespace %s: %w", key.Name, err)
	}
	if !plugins.IsOwnedBy(meta.Labels, Kind, req.Profile.Name) {
		return meta, nil
	}
	// Ours (a pass a moment ago took it over), but not yet in the client's
	// cache, which holds the managed fields that tell which labels we set:
	// that cache catches up in a moment.
	err = wait.PollUntilContextTimeout(ctx, cachePoll, cacheCatchUp, false, func(ctx context.Context) (bool, error) {
		err := req.Client.Get(ctx, key, ns)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	switch {
	case err == nil:
		return ns, nil
	case wait.Interrupted(err) && ctx.Err() == nil:
		return nil, fmt.Errorf("namespace %s: %w", key.Name, errNotCached)
	}
	return nil, fmt.Errorf("read namespace %s: %w", key.Name, err)
}

// errNotCached is liveNamespace's answer for a namespace the watched
// namespaces show as ours and the client's cache does not show yet.
var errNotCached = errors.New("not yet in the cache")

// cacheCatchUp is how long a pass waits for the client's cache to show a
// namespace the watched namespaces show as ours, reading it every
// cachePoll; a pass that waited as long looks again a second later.
var (
	cacheCatchUp = 2 * time.Second
	cachePoll    = 20 * time.Millisecond
)

// mayWrite refuses a namespace that is not ours: one that another owner
// holds (by its owner annotation) always, one that another writer labelled
// always, and the Profile owner's own unless cfg.Adopt.
func mayWrite(cfg *Config, p *kubeflowv1.Profile, live client.Object) error {
	if live == nil || plugins.IsOwnedBy(live.GetLabels(), Kind, p.Name) {
		return nil
	}
	name := live.GetName()
	owner, annotated := live.GetAnnotations()[AnnotationOwner]
	switch {
	case !annotated:
		return plugins.Terminalf(plugins.ReasonConflict, "namespace %s exists and has no %s annotation: it is not the Profile's and is left untouched", name, AnnotationOwner)
	case owner != p.Spec.Owner.Name:
		return plugins.Terminalf(plugins.ReasonConflict, "namespace %s exists and belongs to %q, not to the Profile's owner %q: left untouched", name, owner, p.Spec.Owner.Name)
	case live.GetLabels()[plugins.LabelManagedBy] != "":
		return plugins.Terminalf(plugins.ReasonConflict, "namespace %s exists and is managed by %q (%s=%s, %s=%s): left untouched", name,
			live.GetLabels()[plugins.LabelManagedBy], plugins.LabelPlugin, live.GetLabels()[plugins.LabelPlugin], plugins.LabelProfile, live.GetLabels()[plugins.LabelProfile])
	case !cfg.Adopt:
		return plugins.Terminalf(plugins.ReasonConflict, "namespace %s exists, owned by %q, but profilekit did not make it: turn on the core plugin's adopt to take it over", name, owner)
	}
	return nil
}

// mayAdopt applies mayWrite's rule to the namespace as the Applier read it
// right before adopting it: a namespace the caches did not show yet (made a
// moment ago) is refused for the same reasons as a cached one. The other
// objects go into the namespace only after it was written.
func mayAdopt(cfg *Config, p *kubeflowv1.Profile, live client.Object) error {
	if live.GetObjectKind().GroupVersionKind() != namespaceGVK {
		return nil
	}
	return mayWrite(cfg, p, live)
}

// removeLabels removes label keys that the labels file marks for removal and
// that another writer holds too, so that our apply alone cannot drop them.
func removeLabels(ctx context.Context, c client.Writer, namespace string, keys []string) error {
	labels := make(map[string]any, len(keys))
	for _, k := range slices.Sorted(slices.Values(keys)) {
		labels[k] = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(plugins.FieldManagerFor(Kind))); err != nil {
		return fmt.Errorf("remove labels %v from namespace %s: %w", keys, namespace, err)
	}
	return nil
}

// Revoke keeps the namespace and everything in it, unless the host's
// retention is Delete: the namespace holds the users' workloads and data.
// The objects keep their owner reference, so deleting the Profile still
// deletes them.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	if req.Retention != plugins.RetentionDelete {
		return plugins.Result{}, nil
	}
	return req.Objects.DeleteAll(ctx)
}
