package expose

import (
	"context"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/profilekit/profilekit/plugins"
)

// VirtualServiceKind is the kind of object the plugin writes.
var VirtualServiceKind = schema.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"}

// Plugin writes one VirtualService per app per Profile.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// Definition returns the expose plugin with defaults from the process
// environment (see ConfigFromEnv).
func Definition() plugins.Definition { return DefinitionFromEnv(os.LookupEnv) }

// DefinitionFromEnv returns the expose plugin with defaults read through
// lookup, so that hosts and tests choose the environment. The environment is
// read once, here, so that every Profile sees the same defaults.
func DefinitionFromEnv(lookup func(string) (string, bool)) plugins.Definition {
	base := ConfigFromEnv(lookup)
	return plugins.Definition{
		Plugin: Plugin{},
		NewConfig: func() any {
			// Decoding replaces lists, but a copy keeps one Profile's
			// config from ever sharing memory with another's.
			c := *base
			c.Gateways = slices.Clone(base.Gateways)
			c.Hosts = slices.Clone(base.Hosts)
			return &c
		},
		Owns: []schema.GroupVersionKind{VirtualServiceKind},
	}
}

// Kind returns "expose".
func (Plugin) Kind() string { return Kind }

// Apply writes the Profile's VirtualServices and deletes ours that are no
// longer configured. A header template that fails leaves them as they were.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	vss, err := Build(cfg, req.Profile)
	if err != nil {
		return plugins.Result{}, err
	}
	desired := make([]runtime.ApplyConfiguration, 0, len(vss))
	for _, vs := range vss {
		desired = append(desired, plugins.Encoded(vs))
	}
	return req.Objects.Sync(ctx, desired...)
}

// Revoke deletes the Profile's VirtualServices.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}
