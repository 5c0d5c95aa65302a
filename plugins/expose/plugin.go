package expose

import (
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// VirtualServiceKind is the kind of object the plugin writes.
var VirtualServiceKind = schema.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"}

// Plugin writes one VirtualService per app per Profile and deletes ours
// that are no longer configured. A header template that fails leaves them
// as they were.
type Plugin = plugins.Builder[Config]

// Definition returns the expose plugin with defaults from the process
// environment (see ConfigFromEnv).
func Definition() plugins.Definition { return DefinitionFromEnv(os.LookupEnv) }

// DefinitionFromEnv returns the expose plugin with defaults read through
// lookup, so that hosts and tests choose the environment. The environment is
// read once, here, so that every Profile sees the same defaults.
func DefinitionFromEnv(lookup func(string) (string, bool)) plugins.Definition {
	base := ConfigFromEnv(lookup)
	return plugins.BuilderDefinition(Kind, func() *Config {
		// Decoding replaces lists, but a copy keeps one Profile's config
		// from ever sharing memory with another's.
		c := *base
		c.Gateways = slices.Clone(base.Gateways)
		c.Hosts = slices.Clone(base.Hosts)
		return &c
	}, objects, VirtualServiceKind)
}

// objects is the Profile's VirtualServices.
func objects(cfg *Config, p *kubeflowv1.Profile) ([]runtime.ApplyConfiguration, error) {
	vss, err := Build(cfg, p)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.ApplyConfiguration, 0, len(vss))
	for _, vs := range vss {
		out = append(out, apply.Encoded(vs))
	}
	return out, nil
}
