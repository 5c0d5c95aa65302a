package welcome

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Plugin writes one ConfigMap per Profile, and deletes it on revoke. A
// message that does not fit leaves the ConfigMap as it was: Build's error
// comes before anything is written. It is a plugins.Builder, the shape of
// a plugin that only builds objects from the Profile and its config; one
// that does more (reads the cluster, calls an outside system) implements
// plugins.Plugin's Apply and Revoke itself.
type Plugin = plugins.Builder[Config]

// Definition returns the welcome plugin with its config and the kind it
// owns, for a host: reconcilers.New, reconcilers.NewAdapter, or a registry.
func Definition() plugins.Definition {
	return plugins.BuilderDefinition(Kind, NewConfig, objects, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
}

// objects is the Profile's ConfigMap.
func objects(cfg *Config, p *kubeflowv1.Profile) ([]runtime.ApplyConfiguration, error) {
	cm, err := Build(cfg, p)
	if err != nil {
		return nil, err
	}
	return []runtime.ApplyConfiguration{cm}, nil
}
