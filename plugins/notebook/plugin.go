package notebook

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	d := plugins.BuilderDefinition(Kind, NewConfig, objects, GroupVersionKind)
	// A PodDefault is read by the admission webhook when a pod is made,
	// and by nothing else: one that a tenant made again with fields of its
	// own is replaced whole.
	d.Exclusive = []schema.GroupVersionKind{GroupVersionKind}
	return d
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
