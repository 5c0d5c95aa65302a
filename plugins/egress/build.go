package egress

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	networkingv1 "istio.io/api/networking/v1"
	istioac "istio.io/client-go/pkg/applyconfiguration/networking/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// MeshGateway is Istio's name for the sidecars of the mesh as a gateway.
const MeshGateway = "mesh"

// Objects are the Istio objects that route one Profile's traffic to its
// external hosts through the egress gateway. All of them live in the
// Profile's namespace.
type Objects struct {
	// ServiceEntry makes the hosts known to the Profile's sidecars and to the
	// egress gateway (exported to the Profile's and the gateway's namespace).
	ServiceEntry *istioac.ServiceEntryApplyConfiguration
	// DestinationRule names the subset of the egress gateway that the
	// Profile's sidecars send the hosts' traffic to (exported to the
	// Profile's namespace only).
	DestinationRule *istioac.DestinationRuleApplyConfiguration
	// MeshRoute sends the hosts' TLS traffic from the Profile's sidecars to
	// the egress gateway, by SNI (exported to the Profile's namespace only).
	MeshRoute *istioac.VirtualServiceApplyConfiguration
	// GatewayRoute sends the same traffic from the egress gateway to each
	// host, by SNI (exported to the gateway's namespace only).
	GatewayRoute *istioac.VirtualServiceApplyConfiguration
}

// Gate reports whether routing is on for p. The gate label, when the host
// names one and the Profile has it, decides; otherwise the config's Enabled
// does. A label value that is not a boolean is off, and also returned as a
// terminal InvalidLabel error so that it is reported.
func Gate(cfg *Config, p *kubeflowv1.Profile) (bool, error) {
	if cfg.GateLabel != "" {
		if v, ok := p.Labels[cfg.GateLabel]; ok {
			on, err := strconv.ParseBool(v)
			if err != nil {
				return false, plugins.Terminalf(plugins.ReasonInvalidLabel,
					"plugin %s: label %s=%q is not true or false; egress routing is off", Kind, cfg.GateLabel, v)
			}
			return on, nil
		}
	}
	return cfg.Enabled, nil
}

// Build returns the objects for the Profile p, or nil when cfg lists no hosts.
// It does not look at the gate.
func Build(cfg *Config, p *kubeflowv1.Profile) *Objects {
	if len(cfg.Hosts) == 0 {
		return nil
	}
	ns := plugins.Namespace(p)
	gwNS, _ := cfg.gatewayRef()
	hosts := slices.SortedFunc(slices.Values(cfg.Hosts), func(a, b ExternalHost) int { return cmp.Compare(a.Host, b.Host) })
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Host
	}
	// "." is the Profile's namespace; naming it again would be a duplicate.
	exportGateway, exportBoth := []string{gwNS}, []string{".", gwNS}
	if gwNS == ns {
		exportGateway, exportBoth = []string{"."}, []string{"."}
	}

	se := istioac.ServiceEntry(cfg.Name, ns)
	se.Spec = &networkingv1.ServiceEntry{
		Hosts:      names,
		Ports:      servicePorts(hosts),
		Location:   networkingv1.ServiceEntry_MESH_EXTERNAL,
		Resolution: networkingv1.ServiceEntry_DNS,
		ExportTo:   exportBoth,
	}

	dr := istioac.DestinationRule(cfg.Name, ns)
	dr.Spec = &networkingv1.DestinationRule{
		Host:     cfg.GatewayService,
		Subsets:  []*networkingv1.Subset{{Name: cfg.Name}},
		ExportTo: []string{"."},
	}

	mesh := istioac.VirtualService(cfg.Name+"-mesh", ns)
	mesh.Spec = &networkingv1.VirtualService{
		Hosts:    names,
		Gateways: []string{MeshGateway},
		ExportTo: []string{"."},
	}
	gw := istioac.VirtualService(cfg.Name+"-gateway", ns)
	gw.Spec = &networkingv1.VirtualService{
		Hosts:    slices.Clone(names),
		Gateways: []string{cfg.Gateway},
		ExportTo: exportGateway,
	}
	for _, h := range hosts {
		mesh.Spec.Tls = append(mesh.Spec.Tls, &networkingv1.TLSRoute{
			Match: []*networkingv1.TLSMatchAttributes{{Gateways: []string{MeshGateway}, Port: h.port(), SniHosts: []string{h.Host}}},
			Route: []*networkingv1.RouteDestination{{Destination: &networkingv1.Destination{
				Host: cfg.GatewayService, Subset: cfg.Name, Port: &networkingv1.PortSelector{Number: cfg.GatewayPort},
			}}},
		})
		gw.Spec.Tls = append(gw.Spec.Tls, &networkingv1.TLSRoute{
			Match: []*networkingv1.TLSMatchAttributes{{Gateways: []string{cfg.Gateway}, Port: cfg.GatewayPort, SniHosts: []string{h.Host}}},
			Route: []*networkingv1.RouteDestination{{Destination: &networkingv1.Destination{
				Host: h.Host, Port: &networkingv1.PortSelector{Number: h.port()},
			}}},
		})
	}
	return &Objects{ServiceEntry: se, DestinationRule: dr, MeshRoute: mesh, GatewayRoute: gw}
}

// servicePorts returns one TLS port per distinct port of hosts, sorted.
func servicePorts(hosts []ExternalHost) []*networkingv1.ServicePort {
	var nums []uint32
	for _, h := range hosts {
		nums = append(nums, h.port())
	}
	slices.Sort(nums)
	nums = slices.Compact(nums)
	out := make([]*networkingv1.ServicePort, len(nums))
	for i, n := range nums {
		out[i] = &networkingv1.ServicePort{Number: n, Name: fmt.Sprintf("tls-%d", n), Protocol: "TLS"}
	}
	return out
}
