package welcome

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/profilekit/profilekit/plugins"
)

// Plugin writes one ConfigMap per Profile.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// Definition returns the welcome plugin with its config and the kind it
// owns, for a host: reconcilers.New, reconcilers.NewAdapter, or a registry.
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Owns:      []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")},
	}
}

// Kind returns "welcome".
func (Plugin) Kind() string { return Kind }

// Apply writes the Profile's ConfigMap. A message that does not fit leaves
// the ConfigMap as it was: the error comes before Sync, which is what would
// delete it.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	cm, err := Build(cfg, req.Profile)
	if err != nil {
		return plugins.Result{}, err
	}
	return req.Objects.Sync(ctx, cm)
}

// Revoke deletes the Profile's ConfigMap.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}
