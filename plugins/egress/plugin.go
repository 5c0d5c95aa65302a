package egress

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// The kinds of object the plugin writes.
var (
	ServiceEntryKind    = schema.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "ServiceEntry"}
	DestinationRuleKind = schema.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "DestinationRule"}
	VirtualServiceKind  = schema.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"}
)

// Plugin routes a Profile's chosen external hosts through an egress gateway.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// Definition returns the egress plugin with its config and owned kinds. Its
// objects all live in the Profile's namespace, so it has no outside state.
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Owns:      []schema.GroupVersionKind{ServiceEntryKind, DestinationRuleKind, VirtualServiceKind},
	}
}

// Kind returns "egress".
func (Plugin) Kind() string { return Kind }

// Apply writes the Profile's egress objects when its gate is on, and deletes
// ours when it is off. A gate label that does not parse is off: the objects
// are deleted and the label is reported.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	on, gateErr := Gate(cfg, req.Profile)
	var desired []runtime.ApplyConfiguration
	if on {
		if objs := Build(cfg, req.Profile); objs != nil {
			desired = append(desired,
				apply.Encoded(objs.ServiceEntry), apply.Encoded(objs.DestinationRule),
				apply.Encoded(objs.MeshRoute), apply.Encoded(objs.GatewayRoute))
		}
	}
	res, err := req.Objects.Sync(ctx, desired...)
	return res, errors.Join(err, gateErr)
}

// Revoke deletes the Profile's egress objects.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}
