package quotas

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Plugin writes one ResourceQuota per Profile, or deletes ours when no
// limits are configured. Invalid labels leave the quota as it was.
type Plugin = plugins.Builder[Config]

// Definition returns the quotas plugin with its config and owned kinds.
func Definition() plugins.Definition {
	return plugins.BuilderDefinition(Kind, NewConfig, objects, corev1.SchemeGroupVersion.WithKind("ResourceQuota"))
}

// objects is the Profile's ResourceQuota, if any.
func objects(cfg *Config, p *kubeflowv1.Profile) ([]runtime.ApplyConfiguration, error) {
	rq, err := Build(cfg, p)
	if err != nil || rq == nil {
		return nil, err
	}
	return []runtime.ApplyConfiguration{rq}, nil
}
