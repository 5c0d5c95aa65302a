package limitrange

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/profilekit/profilekit/plugins"
)

// Plugin writes one LimitRange per Profile.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// Definition returns the limitrange plugin with its config and owned kinds.
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:        Plugin{},
		NewConfig:     func() any { return NewConfig() },
		Owns:          []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("LimitRange")},
		ConditionType: "LimitRangeReady",
	}
}

// Kind returns "limitrange".
func (Plugin) Kind() string { return Kind }

// Apply writes the Profile's LimitRange, or deletes ours when no limits are set.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	var desired []runtime.ApplyConfiguration
	if lr := Build(cfg, req.Profile); lr != nil {
		desired = append(desired, lr)
	}
	return req.Objects.Sync(ctx, desired...)
}

// Revoke deletes the Profile's LimitRange.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}
