package namespacemeta

import (
	"context"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/core"
)

// Plugin puts a Profile's labels and annotations on its namespace. Its zero
// value works.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// Definition returns the namespacemeta plugin with its config and a
// metadata watch on namespaces, so that a hand edit of one of its keys, or
// the namespace's creation, wakes the Profile. It owns no object: it writes
// single keys of the namespace that the core plugin or the upstream
// controller makes. An update wakes the Profile only when it changes what
// the plugin reads (see readsChanged).
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Watches: []plugins.Watch{{
			Object:   apply.NewMetadata(namespaceGVK),
			Profiles: func(_ context.Context, o client.Object) []string { return []string{o.GetName()} },
			Changed:  readsChanged,
		}},
	}
}

// readsChanged reports whether an update of a namespace changed what the
// plugin reads of it under the host's config: a key the host allows (only
// those can be a Profile's), what mayMark guards by (the owner annotation,
// profilekit's ownership labels), or its deletion. Other keys, managed
// fields and status wake nothing. A config of another type reads all.
func readsChanged(hostConfig any, before, after client.Object) bool {
	cfg, ok := hostConfig.(*Config)
	if !ok || !before.GetDeletionTimestamp().Equal(after.GetDeletionTimestamp()) {
		return true
	}
	labelRead := func(key string) bool {
		guard := key == plugins.LabelManagedBy || key == plugins.LabelPlugin || key == plugins.LabelProfile
		return guard || slices.ContainsFunc(cfg.Allow.Labels, func(r Rule) bool { return r.matches(key) })
	}
	annotationRead := func(key string) bool {
		return key == core.AnnotationOwner || slices.ContainsFunc(cfg.Allow.Annotations, func(r Rule) bool { return r.matches(key) })
	}
	return differs(before.GetLabels(), after.GetLabels(), labelRead) || differs(before.GetAnnotations(), after.GetAnnotations(), annotationRead)
}

// differs reports whether a and b differ at a key that read picks.
func differs(a, b map[string]string, read func(string) bool) bool {
	for k, v := range a {
		if w, ok := b[k]; (!ok || w != v) && read(k) {
			return true
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && read(k) {
			return true
		}
	}
	return false
}

// Kind returns "namespacemeta".
func (Plugin) Kind() string { return Kind }

// Object is the Profile's namespace, on which the plugin owns single keys.
func Object(p *kubeflowv1.Profile) plugins.Foreign {
	return plugins.Foreign{GVK: namespaceGVK, Name: plugins.Namespace(p)}
}

// Apply makes the namespace hold exactly the Profile's labels and
// annotations of this plugin. A refused key (see Build), or a namespace that
// is not the Profile's owner's, writes nothing.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	file, err := core.ReadLabelsFile(cfg.NamespaceLabelsPath)
	if err != nil {
		return plugins.Result{}, err
	}
	want, err := Build(cfg, file)
	if err != nil {
		return plugins.Result{}, err
	}
	c, err := req.Objects.Mark(ctx, reader{req: req, guard: true}, Object(req.Profile), want)
	var res plugins.Result
	if c.Action != "" {
		res.Add(c)
	}
	return res, err
}

// Revoke gives up every key the plugin holds on the namespace; keys others
// set stay. A namespace that is gone is done, and so is one that is not the
// Profile's owner's (mayMark): nothing on it is this Profile's to remove.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	c, err := req.Objects.Unmark(ctx, reader{req: req, guard: true}, Object(req.Profile))
	if plugins.IsTerminal(err) && plugins.ReasonOf(err, "") == plugins.ReasonConflict {
		// Another owner's namespace (the next owner of a deleted
		// Profile's name, say): the keys on it are not this Profile's
		// to take away.
		log.FromContext(ctx).V(1).Info("namespace is not the Profile's; left untouched", "namespace", Object(req.Profile).Name, "reason", err.Error())
		return plugins.Result{}, nil
	}
	var res plugins.Result
	if c.Action == plugins.Configured {
		res.Add(c)
	}
	return res, err
}

// mayMark refuses a namespace of the Profile's name that is not the
// Profile's (a system namespace of a Profile's name, say): one whose owner
// annotation, which the core plugin and the upstream controller write, does
// not name the Profile's owner, and that the core plugin did not make for
// the Profile. Mark checks the very namespace it writes, since its apply
// carries the UID of what it read.
func mayMark(p *kubeflowv1.Profile, ns client.Object) error {
	owner, annotated := ns.GetAnnotations()[core.AnnotationOwner]
	if annotated && owner == p.Spec.Owner.Name || plugins.IsOwnedBy(ns.GetLabels(), core.Kind, p.Name) {
		return nil
	}
	return plugins.Terminalf(plugins.ReasonConflict, "namespace %s is not the Profile's: its %s annotation is %q, not the Profile's owner %q; left untouched",
		ns.GetName(), core.AnnotationOwner, owner, p.Spec.Owner.Name)
}

// reader reads the namespace for Mark and Unmark with the managed fields
// that tell which keys are the plugin's. The watched cache, whose event
// woke the pass, keeps no managed fields; the host's cache of profilekit's
// objects keeps profilekit's, but holds only namespaces the core plugin
// made. So the namespace is read from that cache when it holds the version
// the watched cache shows, and else from the API server. With guard, a
// namespace that is not the Profile's (mayMark) is a Conflict.
type reader struct {
	req   plugins.Request
	guard bool
}

var _ client.Reader = reader{}

// Get reads the namespace named by key into obj.
func (r reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.get(ctx, key, obj, opts...); err != nil || !r.guard {
		return err
	}
	return mayMark(r.req.Profile, obj)
}

func (r reader) get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if r.req.Watched == nil {
		return r.req.Client.Get(ctx, key, obj, opts...)
	}
	seen := apply.NewMetadata(namespaceGVK)
	if err := r.req.Watched.Get(ctx, key, seen); err != nil {
		return err
	}
	if err := r.req.Client.Get(ctx, key, obj, opts...); err == nil && obj.GetResourceVersion() == seen.GetResourceVersion() {
		return nil
	}
	return r.req.LiveReader().Get(ctx, key, obj, opts...)
}

// List is not needed by Mark and Unmark.
func (reader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("namespacemeta: list is not supported")
}
