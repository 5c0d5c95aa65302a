package reconcilers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
)

// Cluster is what the upstream profile controller's reconciler offers a
// plugin. Its ProfileReconciler embeds client.Client, but its Scheme field
// hides the client's Scheme method, so it is not a client.Client; it is a
// Cluster.
type Cluster = plugins.Cluster

// Adapter runs a profilekit plugin inside a fork of the upstream Kubeflow
// profile controller. Instantiated with the fork's reconciler and Profile
// types, *Adapter[R, P] has the methods of upstream's Plugin interface:
//
//	ApplyPlugin(*ProfileReconciler, *profilev1.Profile) error
//	RevokePlugin(*ProfileReconciler, *profilev1.Profile) error
//
// and an UnmarshalJSON that takes the spec upstream decodes into each plugin.
// The Profile crosses over as JSON, which both sides share. Upstream keeps
// its own finalizer and calls RevokePlugin on deletion; the adapter writes
// no finalizer.
//
// Upstream calls ApplyPlugin on every pass, the Profile's deletion
// included, and stops at the first error, before RevokePlugin. On a Profile
// being deleted ApplyPlugin therefore does nothing, so that no spec, however
// broken, and no failure holds the deletion: RevokePlugin follows.
//
// An adapter on its own reads the plugin's objects through the fork's
// client, as metadata where the plugin does not read them whole, and returns
// every error for upstream to log and retry. Handed to a Fork that is set up
// with the fork's manager (see Fork.SetupWithManager), it also reads whole
// kinds from the manager's cache, and reports on the Profile as the
// standalone reconciler does: its condition (<Kind>Ready) through a
// StatusWriter, Events, and a spec it refuses as a False condition, not as
// an error that would stop the plugins after it.
type Adapter[R Cluster, P client.Object] struct {
	def       plugins.Definition
	defaults  []byte
	retention plugins.Retention
	outside   outside.Options
	ctx       context.Context
	spec      json.RawMessage
	// ownCtx is true when the fork set ctx (AdapterContext).
	ownCtx bool

	// env is set by Fork.SetupWithManager; nil for an adapter on its own.
	env *forkEnv
}

// AdapterOption configures an Adapter.
type AdapterOption func(*adapterOptions)

type adapterOptions struct {
	defaults  []byte
	retention plugins.Retention
	outside   outside.Options
	ctx       context.Context
}

// AdapterDefaults sets the host defaults of the plugin's config, as JSON.
func AdapterDefaults(defaults []byte) AdapterOption {
	return func(o *adapterOptions) { o.defaults = defaults }
}

// AdapterRetention sets what Revoke does with user data.
func AdapterRetention(r plugins.Retention) AdapterOption {
	return func(o *adapterOptions) { o.retention = r }
}

// AdapterOutside sets the timeout and re-verification period of the
// plugin's outside calls. The record is read through the fork's client,
// which in a fork is the manager's cached client; under a Fork set up with
// the manager, a live read confirms it before any outside call.
func AdapterOutside(o outside.Options) AdapterOption {
	return func(ao *adapterOptions) { ao.outside = o }
}

// AdapterContext sets the context the plugin runs with (upstream's interface
// has none), for example one that carries the fork's logger. Without it, a
// Fork set up with the fork's manager gives the plugin the manager's logger.
func AdapterContext(ctx context.Context) AdapterOption {
	return func(o *adapterOptions) { o.ctx = ctx }
}

// NewAdapter returns an Adapter for def.
func NewAdapter[R Cluster, P client.Object](def plugins.Definition, opts ...AdapterOption) *Adapter[R, P] {
	o := adapterOptions{retention: plugins.RetentionRetain}
	for _, opt := range opts {
		opt(&o)
	}
	a := &Adapter[R, P]{def: def, defaults: o.defaults, retention: o.retention, outside: o.outside, ctx: o.ctx, ownCtx: o.ctx != nil}
	if a.ctx == nil {
		a.ctx = context.Background()
	}
	return a
}

// UnmarshalJSON keeps the plugin's spec from the Profile's spec.plugins
// entry; it is decoded, strictly, when the plugin runs.
func (a *Adapter[R, P]) UnmarshalJSON(data []byte) error {
	a.spec = slices.Clone(data)
	return nil
}

// ApplyPlugin applies the plugin to profile; on a Profile being deleted it
// does nothing (see Adapter).
func (a *Adapter[R, P]) ApplyPlugin(r R, profile P) error {
	p, err := a.profile(profile)
	if err != nil {
		return err
	}
	return a.apply(r, profile, p)
}

// RevokePlugin revokes the plugin from profile. A spec that no longer decodes
// does not stop the revoke: the host defaults serve instead.
func (a *Adapter[R, P]) RevokePlugin(r R, profile P) error {
	p, err := a.profile(profile)
	if err != nil {
		return err
	}
	return a.revoke(r, profile, p, "the Profile is being deleted and waits for the upstream controller's finalizer")
}

func (a *Adapter[R, P]) apply(r R, obj P, p *kubeflowv1.Profile) error {
	if !p.DeletionTimestamp.IsZero() || plugins.Paused(p, a.def.Kind()) {
		return nil
	}
	cfg, err := a.def.Decode(a.defaults, p)
	if err != nil {
		return a.failed(obj, p, err, plugins.ReasonInvalidSpec)
	}
	if err := holdTenure(a.ctx, a.tenures(r), p); err != nil {
		return a.failed(obj, p, err, plugins.ReasonConflict)
	}
	req, record := a.request(r, p, cfg)
	res, err := a.def.Plugin.Apply(a.ctx, req)
	if err = errors.Join(err, record.Flush(a.ctx)); err != nil {
		return a.failed(obj, p, err, plugins.ReasonApplyFailed)
	}
	if res.Waiting != "" {
		// The upstream controller retries an error: the fork's way to look
		// again.
		return fmt.Errorf("plugin %s: waiting for %s", a.def.Kind(), res.Waiting)
	}
	a.applied(p, res)
	return nil
}

// revoke revokes the plugin, with the host defaults when the Profile's spec
// no longer decodes; why says what waits when it fails.
func (a *Adapter[R, P]) revoke(r R, obj P, p *kubeflowv1.Profile, why string) error {
	cfg, err := a.def.Decode(a.defaults, p)
	if err != nil {
		if cfg, err = a.def.DecodeHostDefaults(a.defaults); err != nil {
			return err
		}
	}
	if ok, err := revokesUnderTenure(a.ctx, a.tenures(r), p); !ok || err != nil {
		if err != nil {
			return a.revokeWaits(obj, p, err, why)
		}
		a.revoked(obj, p, plugins.Result{}, nil)
		return nil
	}
	req, record := a.request(r, p, cfg)
	res, err := a.def.Plugin.Revoke(a.ctx, req)
	if err = errors.Join(err, record.Flush(a.ctx)); err != nil {
		return a.revokeWaits(obj, p, err, why)
	}
	if res.Waiting != "" {
		return fmt.Errorf("plugin %s: revoke waits, %s: waiting for %s", a.def.Kind(), why, res.Waiting)
	}
	a.revoked(obj, p, res, record.Dangled())
	return nil
}

// tenures returns the tenure records the plugin holds names in, or nil
// for a plugin without outside state.
func (a *Adapter[R, P]) tenures(r R) *outside.Tenures {
	var live client.Reader
	if a.env != nil {
		live = a.env.live
	}
	return tenures(a.def, r, live, a.outside)
}

// request returns the request of one pass, and the outside-state record
// that the pass writes when it ends.
func (a *Adapter[R, P]) request(r R, p *kubeflowv1.Profile, cfg any) (plugins.Request, *outside.Outside) {
	opts := applierOptions(a.def)
	var outsideOpts []outside.Option
	var live client.Reader
	if a.env != nil {
		live = a.env.live
		opts = append(opts, apply.WithScheme(a.env.scheme), apply.WithLiveReader(a.env.live),
			apply.WithMetadataOnly(metadataOnly(a.def, a.env.whole...)...))
		if a.env.repairs != nil {
			opts = append(opts, apply.WithRepairGate(a.env.repairs))
		}
		outsideOpts = append(outsideOpts, outside.WithLiveReader(a.env.live), outside.WithRecords(a.env.records))
	} else {
		opts = append(opts, apply.WithMetadataOnly(metadataOnly(a.def)...))
	}
	record := outside.New(r, a.def.Kind(), p, a.outside, outsideOpts...)
	return plugins.Request{
		Profile:   p,
		Config:    cfg,
		Client:    r,
		Objects:   apply.New(r, a.def.Kind(), p, a.def.Owns, opts...),
		Outside:   record,
		Retention: a.retention,
		Live:      live,
	}, record
}

// profile converts the fork's Profile to ours through JSON, and puts the spec
// given to UnmarshalJSON in the plugin's spec.plugins entry.
func (a *Adapter[R, P]) profile(profile P) (*kubeflowv1.Profile, error) {
	p, err := convertProfile(profile)
	if err != nil || a.spec == nil {
		return p, err
	}
	i := slices.IndexFunc(p.Spec.Plugins, func(pl kubeflowv1.Plugin) bool { return pl.Kind == a.def.Kind() })
	entry := kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: a.def.Kind()}, Spec: &runtime.RawExtension{Raw: a.spec}}
	if i < 0 {
		p.Spec.Plugins = append(p.Spec.Plugins, entry)
	} else {
		entry.APIVersion = p.Spec.Plugins[i].APIVersion
		p.Spec.Plugins[i] = entry
	}
	return p, nil
}

// convertProfile converts the fork's Profile to ours through JSON.
func convertProfile(profile client.Object) (*kubeflowv1.Profile, error) {
	data, err := json.Marshal(profile)
	if err != nil {
		return nil, fmt.Errorf("encode the fork's profile: %w", err)
	}
	var p kubeflowv1.Profile
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("decode the fork's profile: %w", err)
	}
	return &p, nil
}

// applierOptions lets plugins with outside state write, and prune, beyond the
// Profile's namespace, and the core plugin write upstream's objects.
func applierOptions(def plugins.Definition) []apply.Option {
	return apply.OptionsFor(def)
}
