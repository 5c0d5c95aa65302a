package egress

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
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
type Plugin = plugins.Builder[Config]

// Definition returns the egress plugin with its config and owned kinds. Its
// objects all live in the Profile's namespace, so it has no outside state.
func Definition() plugins.Definition {
	return plugins.BuilderDefinition(Kind, NewConfig, objects, ServiceEntryKind, DestinationRuleKind, VirtualServiceKind)
}

// objects are the Profile's egress objects when its gate is on, none when
// it is off. A gate label that does not parse is off: ours are deleted and
// the label is reported after.
func objects(cfg *Config, p *kubeflowv1.Profile) ([]runtime.ApplyConfiguration, error) {
	on, gateErr := Gate(cfg, p)
	if !on {
		return nil, plugins.AfterWrite(gateErr)
	}
	objs := Build(cfg, p)
	if objs == nil {
		return nil, plugins.AfterWrite(gateErr)
	}
	return []runtime.ApplyConfiguration{
		apply.Encoded(objs.ServiceEntry), apply.Encoded(objs.DestinationRule),
		apply.Encoded(objs.MeshRoute), apply.Encoded(objs.GatewayRoute),
	}, plugins.AfterWrite(gateErr)
}
