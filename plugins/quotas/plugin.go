package quotas

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/profilekit/profilekit/plugins"
)

// Plugin writes one ResourceQuota per Profile.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// Definition returns the quotas plugin with its config and owned kinds.
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Owns:      []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ResourceQuota")},
	}
}

// Kind returns "quotas".
func (Plugin) Kind() string { return Kind }

// Apply writes the Profile's ResourceQuota, or deletes ours when no limits
// are configured. Invalid labels leave the quota as it was.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	rq, err := Build(cfg, req.Profile)
	if err != nil {
		return plugins.Result{}, err
	}
	var desired []runtime.ApplyConfiguration
	if rq != nil {
		desired = append(desired, rq)
	}
	return req.Objects.Sync(ctx, desired...)
}

// Revoke deletes the Profile's ResourceQuota.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}
