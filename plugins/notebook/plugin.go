package notebook

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/profilekit/profilekit/plugins"
)

// Plugin writes PodDefaults in each Profile's namespace.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// Definition returns the notebook plugin with its config and owned kinds.
// The PodDefault CRD must be installed before a host starts it, because the
// host watches PodDefaults.
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Owns:      []schema.GroupVersionKind{GroupVersionKind},
	}
}

// Kind returns "notebook".
func (Plugin) Kind() string { return Kind }

// Apply writes the Profile's PodDefaults and deletes the ones of ours it no
// longer wants.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	pds, err := Build(cfg, req.Profile)
	if err != nil {
		return plugins.Result{}, err
	}
	desired := make([]runtime.ApplyConfiguration, 0, len(pds))
	for _, pd := range pds {
		desired = append(desired, pd)
	}
	return req.Objects.Sync(ctx, desired...)
}

// Revoke deletes the Profile's PodDefaults of ours. Pods they already shaped
// keep what they got.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}
