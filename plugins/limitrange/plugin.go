package limitrange

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Plugin writes one LimitRange per Profile, or deletes ours when none is
// configured.
type Plugin = plugins.Builder[Config]

// Definition returns the limitrange plugin with its config and owned kinds.
func Definition() plugins.Definition {
	def := plugins.BuilderDefinition(Kind, NewConfig, objects, corev1.SchemeGroupVersion.WithKind("LimitRange"))
	def.ConditionType = "LimitRangeReady"
	return def
}

// objects is the Profile's LimitRange, if any.
func objects(cfg *Config, p *kubeflowv1.Profile) ([]runtime.ApplyConfiguration, error) {
	if lr := Build(cfg, p); lr != nil {
		return []runtime.ApplyConfiguration{lr}, nil
	}
	return nil, nil
}
