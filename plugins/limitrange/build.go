package limitrange

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Build returns the LimitRange for p, or nil when no limit is configured.
func Build(cfg *Config, p *kubeflowv1.Profile) *corev1ac.LimitRangeApplyConfiguration {
	l := cfg.Container
	if l.Empty() {
		return nil
	}
	item := corev1ac.LimitRangeItem().WithType(corev1.LimitTypeContainer)
	if len(l.Default) > 0 {
		item.WithDefault(l.Default)
	}
	if len(l.DefaultRequest) > 0 {
		item.WithDefaultRequest(l.DefaultRequest)
	}
	if len(l.Min) > 0 {
		item.WithMin(l.Min)
	}
	if len(l.Max) > 0 {
		item.WithMax(l.Max)
	}
	if len(l.MaxLimitRequestRatio) > 0 {
		item.WithMaxLimitRequestRatio(l.MaxLimitRequestRatio)
	}
	return corev1ac.LimitRange(cfg.Name, plugins.Namespace(p)).
		WithSpec(corev1ac.LimitRangeSpec().WithLimits(item))
}
