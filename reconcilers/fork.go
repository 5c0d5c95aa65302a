package reconcilers

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/api/kubeflow"
	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// Fork serves all of a fork's profilekit plugins as one plugin of the
// upstream profile controller, so that a fork gets what the standalone
// reconciler gives, under upstream's own sequence of calls. *Fork[R, P] has
// upstream's Plugin methods; the fork appends it, once, to the plugins
// GetPluginSpec returns for every Profile, and lets the Profile's entries of
// the kinds it serves pass (see examples/kubeflow-fork).
//
// ApplyPlugin applies every plugin the Profile lists, each on its own: a
// spec one plugin refuses is a False condition and does not stop the others
// (other failures are returned, joined, for upstream to retry). It also
// revokes every plugin the Profile no longer lists but that still shows on
// it (its condition), as the standalone reconciler does. RevokePlugin, which
// upstream calls on deletion, revokes every plugin that is listed or shows.
// On a Profile being deleted ApplyPlugin does nothing.
//
// SetupWithManager, called from the fork's SetupWithManager, makes the
// plugins read from the manager's cache, report their conditions through a
// StatusWriter (one status write per Profile per pass, only when a
// condition changed) and Events, and adds watches on the plugins' own
// objects to the fork's controller, so that drift is put back within
// seconds. Without it the plugins still apply and revoke, but report
// nothing and return every error, as lone Adapters do.
//
// A nil *Fork does nothing, so that code which builds a
// ProfileReconciler without one (upstream's own tests) keeps working.
type Fork[R Cluster, P client.Object] struct {
	adapters []*Adapter[R, P]
}

// NewFork returns a Fork that serves adapters, at most one per kind. The
// adapters are shared by every pass, so none may have been given a spec
// with UnmarshalJSON: each pass reads its plugin's entry from the Profile.
func NewFork[R Cluster, P client.Object](adapters ...*Adapter[R, P]) (*Fork[R, P], error) {
	var kinds []string
	for _, a := range adapters {
		switch {
		case a == nil:
			return nil, errors.New("fork: nil adapter")
		case slices.Contains(kinds, a.def.Kind()):
			return nil, fmt.Errorf("fork: two adapters for plugin %s", a.def.Kind())
		case a.spec != nil:
			return nil, fmt.Errorf("fork: the adapter for plugin %s holds a spec; a Fork's adapters read theirs from each Profile", a.def.Kind())
		}
		kinds = append(kinds, a.def.Kind())
	}
	return &Fork[R, P]{adapters: adapters}, nil
}

// Serves reports whether kind is one of the Fork's plugins, for the fork's
// GetPluginSpec, which lets those entries pass.
func (f *Fork[R, P]) Serves(kind string) bool {
	return f != nil && slices.ContainsFunc(f.adapters, func(a *Adapter[R, P]) bool { return a.def.Kind() == kind })
}

// Definitions returns the definitions of the Fork's plugins.
func (f *Fork[R, P]) Definitions() []plugins.Definition {
	if f == nil {
		return nil
	}
	defs := make([]plugins.Definition, 0, len(f.adapters))
	for _, a := range f.adapters {
		defs = append(defs, a.def)
	}
	return defs
}

// ApplyPlugin applies the plugins the Profile lists and revokes those it no
// longer lists but still shows; see Fork.
func (f *Fork[R, P]) ApplyPlugin(r R, profile P) error {
	if f == nil || len(f.adapters) == 0 {
		return nil
	}
	p, err := convertProfile(profile)
	if err != nil || !p.DeletionTimestamp.IsZero() {
		return err
	}
	var errs []error
	for _, a := range f.adapters {
		switch {
		case plugins.Listed(p, a.def.Kind()):
			errs = append(errs, a.apply(r, profile, p))
		case a.shows(p):
			errs = append(errs, a.revoke(r, profile, p, "the Profile no longer lists the plugin"))
		}
	}
	return errors.Join(errs...)
}

// RevokePlugin revokes every plugin the Profile lists or still shows; see
// Fork. Each runs whatever the others do; errors are joined, and upstream
// keeps its finalizer until none is left.
func (f *Fork[R, P]) RevokePlugin(r R, profile P) error {
	if f == nil || len(f.adapters) == 0 {
		return nil
	}
	p, err := convertProfile(profile)
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range f.adapters {
		if plugins.Listed(p, a.def.Kind()) || a.shows(p) {
			errs = append(errs, a.revoke(r, profile, p, "the Profile is being deleted and waits for the upstream controller's finalizer"))
		}
	}
	return errors.Join(errs...)
}

// shows reports whether the Profile shows that the plugin was applied to
// it: it carries the plugin's condition.
func (a *Adapter[R, P]) shows(p *kubeflowv1.Profile) bool {
	return plugins.FindCondition(p.Status.Conditions, a.def.Condition()) != nil
}

// forkEnv is what an adapter under a Fork set up with the fork's manager
// uses beyond the fork's client.
type forkEnv struct {
	// scheme is the fork's; the Applier reads the kinds it knows typed,
	// from the manager's cache.
	scheme *runtime.Scheme
	// live reads from the API server, to tell whose an object the cache
	// cannot show is.
	live client.Reader
	// whole are the owned kinds some plugin of the Fork reads whole.
	whole    []schema.GroupVersionKind
	status   *StatusWriter
	recorder events.EventRecorder
	// records are the plugin's outside-state records written and not yet
	// shown by the cache.
	records *outside.Records
	// repairs bounds how often an object another writer keeps changing
	// is put back.
	repairs *repairs
}

// SetupWithManager readies the Fork for the fork's manager and adds to b,
// the fork's controller builder, watches on the plugins' own objects (see
// WatchOwned). Call it once, from the fork's SetupWithManager, before b
// completes and before the manager starts.
func (f *Fork[R, P]) SetupWithManager(mgr ctrl.Manager, b *builder.Builder) error {
	if f == nil {
		return nil
	}
	status, err := newForkStatusWriter(mgr)
	if err != nil {
		return err
	}
	defs := f.Definitions()
	whole := WholeKinds(defs...)
	for _, a := range f.adapters {
		kind := a.def.Kind()
		status.Expect(a.def.Condition(), func(p *kubeflowv1.Profile) bool { return plugins.Listed(p, kind) })
		a.env = &forkEnv{
			scheme:   mgr.GetScheme(),
			live:     mgr.GetAPIReader(),
			whole:    whole,
			status:   status,
			recorder: mgr.GetEventRecorder(plugins.FieldManagerFor(a.def.Kind())),
			records:  outside.NewRecords(),
			repairs:  newRepairs(kind),
		}
		if !a.ownCtx {
			a.ctx = log.IntoContext(a.ctx, mgr.GetLogger().WithValues("plugin", kind))
		}
	}
	return WatchOwned(mgr, b, defs...)
}

// newForkStatusWriter returns a StatusWriter for the fork's manager. The
// fork's scheme has the fork's own Profile type under the Profile's kind, so
// the writer gets a client of its own, with profilekit's Profile type, that
// reads from the API server: it reads only when it has a condition to write.
func newForkStatusWriter(mgr ctrl.Manager) (*StatusWriter, error) {
	s := runtime.NewScheme()
	if err := kubeflow.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("fork status writer: %w", err)
	}
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: s, HTTPClient: mgr.GetHTTPClient(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("fork status writer: %w", err)
	}
	return NewStatusWriter(statusManager{Manager: mgr, client: c}, 0)
}

// statusManager is the fork's manager with profilekit's Profile client.
type statusManager struct {
	ctrl.Manager
	client client.Client
}

func (m statusManager) GetClient() client.Client    { return m.client }
func (m statusManager) GetAPIReader() client.Reader { return m.client }
