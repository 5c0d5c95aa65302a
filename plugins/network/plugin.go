package network

import (
	"context"
	"errors"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/plugins"
)

// Plugin writes the configured NetworkPolicies into each Profile's namespace.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// Definition returns the network plugin with its config and owned kinds.
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Owns:      []schema.GroupVersionKind{networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy")},
	}
}

// Kind returns "network".
func (Plugin) Kind() string { return Kind }

// Apply writes the policies that are on and deletes ours that are not. A gate
// whose value is not a boolean keeps its policy off and makes the pass a
// terminal InvalidLabel (or InvalidSpec, for a spec gate) error after the
// policies are in sync, so that NetworkReady=False names the gate and its
// value until it is fixed. An invalid selector writes and deletes nothing.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	d, err := Build(cfg, req.Profile)
	if err != nil {
		return plugins.Result{}, err
	}
	desired := make([]runtime.ApplyConfiguration, 0, len(d.Policies))
	for _, np := range d.Policies {
		desired = append(desired, np)
	}
	res, err := req.Objects.Sync(ctx, desired...)
	errs := []error{err}
	for _, g := range d.Off {
		if !g.Invalid {
			continue
		}
		errs = append(errs, plugins.Terminal(g.Reason(), errors.New(g.Message())))
	}
	return res, errors.Join(errs...)
}

// Revoke deletes the Profile's NetworkPolicies that this plugin wrote.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}

// LoadConfig decodes a config from YAML or JSON over the built-in defaults,
// strictly, and validates it, as a host does with its defaults.
func LoadConfig(data []byte) (*Config, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("network config: %w", err)
	}
	cfg, err := Definition().DecodeHostDefaults(js)
	if err != nil {
		return nil, err
	}
	return cfg.(*Config), nil
}
