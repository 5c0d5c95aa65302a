package welcome

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/placeholders"
)

// Build returns the Profile's ConfigMap: the message with its placeholders
// filled in, and the contact when one is set. A message longer than
// MaxLength is a terminal InvalidSpec error that gives both lengths.
func Build(cfg *Config, p *kubeflowv1.Profile) (*corev1ac.ConfigMapApplyConfiguration, error) {
	msg := placeholders.Expand(cfg.Message, placeholders.Of(p))
	if len(msg) > cfg.MaxLength {
		return nil, plugins.Terminalf(plugins.ReasonInvalidSpec, "message is %d bytes with its placeholders filled in, above maxLength %d", len(msg), cfg.MaxLength)
	}
	data := map[string]string{"message": msg}
	if cfg.Contact != "" {
		data["contact"] = cfg.Contact
	}
	return corev1ac.ConfigMap(cfg.Name, plugins.Namespace(p)).WithData(data), nil
}
