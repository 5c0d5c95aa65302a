package network

import (
	"errors"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Plugin writes the configured NetworkPolicies into each Profile's namespace.
type Plugin = plugins.Builder[Config]

// Definition returns the network plugin with its config and owned kinds.
func Definition() plugins.Definition {
	return plugins.BuilderDefinition(Kind, NewConfig, objects, networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"))
}

// objects are the policies that are on. A gate whose value is not a
// boolean keeps its policy off and is reported after the policies are in
// sync, as a terminal InvalidLabel (or InvalidSpec, for a spec gate)
// error, so that NetworkReady=False names the gate and its value until it
// is fixed. An invalid selector writes and deletes nothing.
func objects(cfg *Config, p *kubeflowv1.Profile) ([]runtime.ApplyConfiguration, error) {
	d, err := Build(cfg, p)
	if err != nil {
		return nil, err
	}
	desired := make([]runtime.ApplyConfiguration, 0, len(d.Policies))
	for _, np := range d.Policies {
		desired = append(desired, np)
	}
	var errs []error
	for _, g := range d.Off {
		if g.Invalid {
			errs = append(errs, plugins.Terminal(g.Reason(), errors.New(g.Message())))
		}
	}
	return desired, plugins.AfterWrite(errors.Join(errs...))
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
