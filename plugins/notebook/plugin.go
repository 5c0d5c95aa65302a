package notebook

import (
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Plugin writes PodDefaults in each Profile's namespace and deletes the
// ones of ours it no longer wants; its revoke deletes them all (pods they
// already shaped keep what they got).
type Plugin = plugins.Builder[Config]

// Definition returns the notebook plugin with its config and owned kinds.
// The PodDefault CRD must be installed before a host starts it, because the
// host watches PodDefaults.
func Definition() plugins.Definition {
	return plugins.BuilderDefinition(Kind, NewConfig, objects, GroupVersionKind)
}

// objects is the Profile's PodDefaults.
func objects(cfg *Config, p *kubeflowv1.Profile) ([]runtime.ApplyConfiguration, error) {
	pds, err := Build(cfg, p)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.ApplyConfiguration, 0, len(pds))
	for _, pd := range pds {
		out = append(out, pd)
	}
	return out, nil
}
