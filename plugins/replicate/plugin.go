package replicate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// Plugin copies the host's sources into each Profile's namespace.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

var (
	secrets    = corev1.SchemeGroupVersion.WithKind(KindSecret)
	configMaps = corev1.SchemeGroupVersion.WithKind(KindConfigMap)
)

// Definition returns the replicate plugin with its config, its owned kinds,
// and watches on the sources only: one cache per source, in the source's
// namespace, by name or by selector, so that no other Secret or ConfigMap
// is held in memory. A change to a source reconciles only the Profiles that
// get it.
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Owns:      []schema.GroupVersionKind{configMaps, secrets},
		// A copy is output, whole: one that someone added fields to is
		// made again from its source.
		Exclusive: []schema.GroupVersionKind{configMaps, secrets},
		Watches: []plugins.Watch{
			{Object: &corev1.Secret{}, Scopes: scopesOf(KindSecret), Carries: carries},
			{Object: &corev1.ConfigMap{}, Scopes: scopesOf(KindConfigMap), Carries: carries},
		},
	}
}

// scopesOf returns the scopes of the host's sources of one kind.
func scopesOf(kind string) func(any) []plugins.Scope {
	return func(hostConfig any) []plugins.Scope {
		cfg, ok := hostConfig.(*Config)
		if !ok {
			return nil
		}
		return Scopes(cfg, kind)
	}
}

// Scopes returns what the host watches for the sources of one kind: one
// scope per source, by name or by selector in its namespace.
func Scopes(cfg *Config, kind string) []plugins.Scope {
	var out []plugins.Scope
	for i := range cfg.Sources {
		s := &cfg.Sources[i]
		if s.Kind != kind {
			continue
		}
		sc := plugins.Scope{Namespace: s.Namespace, Name: s.Name}
		if s.Selector != nil {
			sc.Labels = s.selector()
		}
		out = append(out, sc)
	}
	return out
}

// carries reports whether a Profile with config cfg gets the source object o.
func carries(o client.Object, p *kubeflowv1.Profile, cfg any) bool {
	c, ok := cfg.(*Config)
	if !ok {
		return false
	}
	kind := KindSecret
	if _, ok := o.(*corev1.ConfigMap); ok {
		kind = KindConfigMap
	}
	return slices.ContainsFunc(c.For(p), func(s *Source) bool { return s.picks(kind, o) })
}

// picks reports whether object o of the given kind, delivered by a source
// watch, may concern the source. A selector source does not look at o's
// labels: an object that stops matching arrives with its new labels, and its
// copy must then be reported.
func (s *Source) picks(kind string, o client.Object) bool {
	if s.Kind != kind || s.Namespace != o.GetNamespace() {
		return false
	}
	return s.Name == "" || s.Name == o.GetName()
}

// Kind returns "replicate".
func (Plugin) Kind() string { return Kind }

// Apply reads the Profile's sources from the watched caches and writes their
// copies. Copies of a source that cannot be read now are left as they are;
// copies of a source that is gone are kept (and the condition says so)
// unless its policy is Delete; copies of sources the Profile no longer gets
// are deleted.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	reader := req.WatchedReader()
	sources := cfg.For(req.Profile)
	var errs []error
	var found []Found
	unread := map[string]bool{}
	for _, s := range sources {
		objs, err := read(ctx, reader, s)
		if err != nil {
			unread[s.ID] = true
			errs = append(errs, err)
			continue
		}
		found = append(found, Found{Source: s, Objects: objs})
	}
	copies, err := Build(req.Profile, found)
	if err != nil {
		return plugins.Result{}, err
	}
	missing, unlisted := keepCopies(ctx, req, cfg, sources, found, unread, copies)
	desired := make([]runtime.ApplyConfiguration, 0, len(copies))
	for _, c := range copies {
		desired = append(desired, c.Object)
	}
	write := req.Objects.Sync
	if unlisted != nil {
		// Which copies the policies keep is unknown: the wanted ones are
		// written, and none is deleted.
		errs = append(errs, unlisted)
		write = req.Objects.Apply
	}
	res, err := write(ctx, desired...)
	if err != nil {
		errs = append(errs, err)
	}
	if len(missing) > 0 {
		errs = append(errs, plugins.Terminalf(ReasonSourceNotFound, "%s", strings.Join(missing, "; ")))
	}
	return res, errors.Join(errs...)
}

// read returns the objects a source picks now, sorted by name.
func read(ctx context.Context, r client.Reader, s *Source) ([]client.Object, error) {
	if s.Name != "" {
		var obj client.Object = &corev1.Secret{}
		if s.Kind == KindConfigMap {
			obj = &corev1.ConfigMap{}
		}
		err := r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, obj)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("source %s: read %s %s/%s: %w", s.ID, s.Kind, s.Namespace, s.Name, err)
		}
		return []client.Object{obj}, nil
	}
	opts := []client.ListOption{client.InNamespace(s.Namespace), client.MatchingLabelsSelector{Selector: s.selector()}}
	var out []client.Object
	if s.Kind == KindConfigMap {
		var l corev1.ConfigMapList
		if err := r.List(ctx, &l, opts...); err != nil {
			return nil, fmt.Errorf("source %s: list ConfigMaps in %s: %w", s.ID, s.Namespace, err)
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	} else {
		var l corev1.SecretList
		if err := r.List(ctx, &l, opts...); err != nil {
			return nil, fmt.Errorf("source %s: list Secrets in %s: %w", s.ID, s.Namespace, err)
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b client.Object) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// keepCopies tells the Applier which existing copies to leave in place
// although they are not desired now: those of sources that could not be read,
// and those of sources that are gone under the Retain policy. It returns a
// description of each source that is gone, for the condition: names only;
// and an error when it could not list the copies, so that nothing is
// pruned on a guess.
func keepCopies(ctx context.Context, req plugins.Request, cfg *Config, sources []*Source, found []Found, unread map[string]bool, copies []Copy) ([]string, error) {
	desired := map[string]bool{}
	for _, c := range copies {
		desired[c.Kind+"/"+c.Name] = true
	}
	present := map[string]bool{}
	var missing []string
	var gone []*Source
	kept := map[string]bool{}
	for _, f := range found {
		for _, o := range f.Objects {
			present[f.Source.ID+" "+o.GetNamespace()+"/"+o.GetName()] = true
		}
		if f.Source.Name != "" && len(f.Objects) == 0 {
			gone = append(gone, f.Source)
		}
	}
	byID := map[string]*Source{}
	for _, s := range sources {
		byID[s.ID] = s
	}
	ns := plugins.Namespace(req.Profile)
	sel := client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(Kind, req.Profile.Name)}
	var errs []error
	for _, kind := range []schema.GroupVersionKind{configMaps, secrets} {
		existing, err := ownedCopies(ctx, req.Client, kind, client.InNamespace(ns), sel)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range existing {
			id := o.GetAnnotations()[AnnotationSource]
			from := o.GetAnnotations()[AnnotationFrom]
			s, ok := byID[id]
			switch {
			case !ok || desired[kind.Kind+"/"+o.GetName()]:
				// Not the Profile's any more, or still desired.
			case unread[id]:
				req.Objects.Keep(kind, ns, o.GetName())
			case !present[id+" "+from] && cfg.policy(s) == SourceDeletedRetain:
				req.Objects.Keep(kind, ns, o.GetName())
				kept[id] = true
				if s.Selector != nil {
					missing = append(missing, fmt.Sprintf("source %s: %s %s not found, copy %s kept", id, s.Kind, from, o.GetName()))
				}
			}
		}
	}
	for _, s := range gone {
		msg := fmt.Sprintf("source %s: %s %s/%s not found", s.ID, s.Kind, s.Namespace, s.Name)
		if kept[s.ID] {
			msg += ", copy " + s.copyName() + " kept"
		}
		missing = append(missing, msg)
	}
	slices.Sort(missing)
	return missing, errors.Join(errs...)
}

// ownedCopies lists the plugin's copies of one kind.
func ownedCopies(ctx context.Context, c client.Reader, kind schema.GroupVersionKind, opts ...client.ListOption) ([]client.Object, error) {
	var out []client.Object
	if kind.Kind == KindConfigMap {
		var l corev1.ConfigMapList
		if err := c.List(ctx, &l, opts...); err != nil {
			return nil, fmt.Errorf("list copies: %w", err)
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
		return out, nil
	}
	// Secrets are cached as metadata only: their data stays out of the
	// host's memory, and only names and annotations are read here.
	l := apply.NewMetadataList(secrets)
	if err := c.List(ctx, l, opts...); err != nil {
		return nil, fmt.Errorf("list copies: %w", err)
	}
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out, nil
}

// Revoke deletes the Profile's copies.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}
