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
// The Profile crosses over as JSON, which both sides share. Upstream keeps the
// Profile's status and its own finalizer and calls RevokePlugin on deletion,
// so the adapter writes neither; it returns errors for upstream to report.
type Adapter[R Cluster, P client.Object] struct {
	def       plugins.Definition
	defaults  []byte
	retention plugins.Retention
	outside   plugins.OutsideOptions
	ctx       context.Context
	spec      json.RawMessage
}

// AdapterOption configures an Adapter.
type AdapterOption func(*adapterOptions)

type adapterOptions struct {
	defaults  []byte
	retention plugins.Retention
	outside   plugins.OutsideOptions
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
// plugin's outside calls. The fork's reconciler has no cache, so the record
// is read from the API server on each pass.
func AdapterOutside(o plugins.OutsideOptions) AdapterOption {
	return func(ao *adapterOptions) { ao.outside = o }
}

// AdapterContext sets the context the plugin runs with (upstream's interface
// has none), for example one that carries the fork's logger.
func AdapterContext(ctx context.Context) AdapterOption {
	return func(o *adapterOptions) { o.ctx = ctx }
}

// NewAdapter returns an Adapter for def.
func NewAdapter[R Cluster, P client.Object](def plugins.Definition, opts ...AdapterOption) *Adapter[R, P] {
	o := adapterOptions{retention: plugins.RetentionRetain, ctx: context.Background()}
	for _, opt := range opts {
		opt(&o)
	}
	return &Adapter[R, P]{def: def, defaults: o.defaults, retention: o.retention, outside: o.outside, ctx: o.ctx}
}

// UnmarshalJSON keeps the plugin's spec from the Profile's spec.plugins
// entry; it is decoded, strictly, when the plugin runs.
func (a *Adapter[R, P]) UnmarshalJSON(data []byte) error {
	a.spec = slices.Clone(data)
	return nil
}

// ApplyPlugin applies the plugin to profile.
func (a *Adapter[R, P]) ApplyPlugin(r R, profile P) error {
	p, err := a.profile(profile)
	if err != nil {
		return err
	}
	cfg, err := a.def.Decode(a.defaults, p)
	if err != nil {
		return err
	}
	req := a.request(r, p, cfg)
	_, err = a.def.Plugin.Apply(a.ctx, req)
	return errors.Join(err, req.Outside.Flush(a.ctx))
}

// RevokePlugin revokes the plugin from profile. A spec that no longer decodes
// does not stop the revoke: the host defaults serve instead.
func (a *Adapter[R, P]) RevokePlugin(r R, profile P) error {
	p, err := a.profile(profile)
	if err != nil {
		return err
	}
	cfg, err := a.def.Decode(a.defaults, p)
	if err != nil {
		if cfg, err = a.def.DecodeHostDefaults(a.defaults); err != nil {
			return err
		}
	}
	req := a.request(r, p, cfg)
	_, err = a.def.Plugin.Revoke(a.ctx, req)
	return errors.Join(err, req.Outside.Flush(a.ctx))
}

func (a *Adapter[R, P]) request(r R, p *kubeflowv1.Profile, cfg any) plugins.Request {
	return plugins.Request{
		Profile:   p,
		Config:    cfg,
		Client:    r,
		Objects:   plugins.NewApplier(r, a.def.Kind(), p, a.def.Owns, applierOptions(a.def)...),
		Outside:   plugins.NewOutside(r, a.def.Kind(), p, a.outside),
		Retention: a.retention,
	}
}

// profile converts the fork's Profile to ours through JSON, and puts the spec
// given to UnmarshalJSON in the plugin's spec.plugins entry.
func (a *Adapter[R, P]) profile(profile P) (*kubeflowv1.Profile, error) {
	data, err := json.Marshal(profile)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: encode profile: %w", a.def.Kind(), err)
	}
	var p kubeflowv1.Profile
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("plugin %s: decode profile: %w", a.def.Kind(), err)
	}
	if a.spec == nil {
		return &p, nil
	}
	i := slices.IndexFunc(p.Spec.Plugins, func(pl kubeflowv1.Plugin) bool { return pl.Kind == a.def.Kind() })
	entry := kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: a.def.Kind()}, Spec: &runtime.RawExtension{Raw: a.spec}}
	if i < 0 {
		p.Spec.Plugins = append(p.Spec.Plugins, entry)
	} else {
		entry.APIVersion = p.Spec.Plugins[i].APIVersion
		p.Spec.Plugins[i] = entry
	}
	return &p, nil
}

// applierOptions lets plugins with outside state write, and prune, beyond the
// Profile's namespace, and the core plugin write upstream's objects.
func applierOptions(def plugins.Definition) []plugins.ApplierOption {
	return def.ApplierOptions()
}
