package egress_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	networkingv1 "istio.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/egress"
)

func profile(name string, labels map[string]string, ps ...kubeflowv1.Plugin) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: kubeflowv1.ProfileSpec{Plugins: ps}}
}

func TestGate(t *testing.T) {
	const label = egress.DefaultGateLabel
	tests := []struct {
		reason    string
		gateLabel string
		enabled   bool
		labels    map[string]string
		wantOn    bool
		wantErr   string
	}{
		{reason: "no label and not enabled is off", gateLabel: label},
		{reason: "no label follows the spec's enabled", gateLabel: label, enabled: true, wantOn: true},
		{reason: "label true is on", gateLabel: label, labels: map[string]string{label: "true"}, wantOn: true},
		{reason: "ParseBool's other spellings count", gateLabel: label, labels: map[string]string{label: "1"}, wantOn: true},
		{reason: "label false wins over enabled", gateLabel: label, enabled: true, labels: map[string]string{label: "false"}},
		{reason: "an empty label value does not parse, so it is off and reported", gateLabel: label, enabled: true, labels: map[string]string{label: ""},
			wantErr: `label egress.profilekit.dev/enabled="" is not true or false`},
		{reason: "a value that does not parse is off and reported", gateLabel: label, labels: map[string]string{label: "yes"},
			wantErr: `label egress.profilekit.dev/enabled="yes" is not true or false; egress routing is off`},
		{reason: "with the label turned off by the host, labels are ignored", labels: map[string]string{label: "true"}},
		{reason: "the host may name another label", gateLabel: "example.org/egress", labels: map[string]string{"example.org/egress": "true", label: "false"}, wantOn: true},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg := egress.NewConfig()
			cfg.GateLabel = tt.gateLabel
			cfg.Enabled = tt.enabled
			on, err := egress.Gate(cfg, profile("team-a", tt.labels))
			if on != tt.wantOn {
				t.Errorf("on = %v, want %v", on, tt.wantOn)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("error = %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if plugins.ReasonOf(err, "") != plugins.ReasonInvalidLabel || !plugins.IsTerminal(err) {
				t.Errorf("error %v is not a terminal InvalidLabel", err)
			}
		})
	}
}

type specs struct {
	ServiceEntry    *networkingv1.ServiceEntry
	DestinationRule *networkingv1.DestinationRule
	MeshRoute       *networkingv1.VirtualService
	GatewayRoute    *networkingv1.VirtualService
	Names           []string
}

func tlsRoute(gateway string, matchPort uint32, sni, host, subset string, port uint32) *networkingv1.TLSRoute {
	return &networkingv1.TLSRoute{
		Match: []*networkingv1.TLSMatchAttributes{{Gateways: []string{gateway}, Port: matchPort, SniHosts: []string{sni}}},
		Route: []*networkingv1.RouteDestination{{Destination: &networkingv1.Destination{Host: host, Subset: subset, Port: &networkingv1.PortSelector{Number: port}}}},
	}
}

func TestBuild(t *testing.T) {
	const gwSvc = egress.DefaultGatewayService
	tests := []struct {
		reason string
		cfg    func(c *egress.Config)
		want   *specs
	}{
		{
			reason: "no hosts, no objects",
			cfg:    func(c *egress.Config) {},
		},
		{
			reason: "one host on the default port: objects in the Profile namespace, exported to the gateway's where it needs them",
			cfg:    func(c *egress.Config) { c.Hosts = []egress.ExternalHost{{Host: "api.example.org"}} },
			want: &specs{
				Names: []string{"team-a/profilekit-egress", "team-a/profilekit-egress", "team-a/profilekit-egress-mesh", "team-a/profilekit-egress-gateway"},
				ServiceEntry: &networkingv1.ServiceEntry{
					Hosts:      []string{"api.example.org"},
					Ports:      []*networkingv1.ServicePort{{Number: 443, Name: "tls-443", Protocol: "TLS"}},
					Location:   networkingv1.ServiceEntry_MESH_EXTERNAL,
					Resolution: networkingv1.ServiceEntry_DNS,
					ExportTo:   []string{".", "istio-system"},
				},
				DestinationRule: &networkingv1.DestinationRule{Host: gwSvc, Subsets: []*networkingv1.Subset{{Name: "profilekit-egress"}}, ExportTo: []string{"."}},
				MeshRoute: &networkingv1.VirtualService{
					Hosts: []string{"api.example.org"}, Gateways: []string{"mesh"}, ExportTo: []string{"."},
					Tls: []*networkingv1.TLSRoute{tlsRoute("mesh", 443, "api.example.org", gwSvc, "profilekit-egress", 443)},
				},
				GatewayRoute: &networkingv1.VirtualService{
					Hosts: []string{"api.example.org"}, Gateways: []string{"istio-system/istio-egressgateway"}, ExportTo: []string{"istio-system"},
					Tls: []*networkingv1.TLSRoute{tlsRoute("istio-system/istio-egressgateway", 443, "api.example.org", "api.example.org", "", 443)},
				},
			},
		},
		{
			reason: "hosts are sorted, ports deduplicated, and the gateway is all configuration",
			cfg: func(c *egress.Config) {
				c.Name = "out"
				c.Gateway = "egress/gw"
				c.GatewayService = "gw.egress.svc.corp.internal"
				c.GatewayPort = 15443
				c.Hosts = []egress.ExternalHost{{Host: "b.example.com", Port: 8443}, {Host: "a.example.com", Port: 443}, {Host: "c.example.com", Port: 8443}}
			},
			want: &specs{
				Names: []string{"team-a/out", "team-a/out", "team-a/out-mesh", "team-a/out-gateway"},
				ServiceEntry: &networkingv1.ServiceEntry{
					Hosts: []string{"a.example.com", "b.example.com", "c.example.com"},
					Ports: []*networkingv1.ServicePort{
						{Number: 443, Name: "tls-443", Protocol: "TLS"},
						{Number: 8443, Name: "tls-8443", Protocol: "TLS"},
					},
					Location:   networkingv1.ServiceEntry_MESH_EXTERNAL,
					Resolution: networkingv1.ServiceEntry_DNS,
					ExportTo:   []string{".", "egress"},
				},
				DestinationRule: &networkingv1.DestinationRule{Host: "gw.egress.svc.corp.internal", Subsets: []*networkingv1.Subset{{Name: "out"}}, ExportTo: []string{"."}},
				MeshRoute: &networkingv1.VirtualService{
					Hosts: []string{"a.example.com", "b.example.com", "c.example.com"}, Gateways: []string{"mesh"}, ExportTo: []string{"."},
					Tls: []*networkingv1.TLSRoute{
						tlsRoute("mesh", 443, "a.example.com", "gw.egress.svc.corp.internal", "out", 15443),
						tlsRoute("mesh", 8443, "b.example.com", "gw.egress.svc.corp.internal", "out", 15443),
						tlsRoute("mesh", 8443, "c.example.com", "gw.egress.svc.corp.internal", "out", 15443),
					},
				},
				GatewayRoute: &networkingv1.VirtualService{
					Hosts: []string{"a.example.com", "b.example.com", "c.example.com"}, Gateways: []string{"egress/gw"}, ExportTo: []string{"egress"},
					Tls: []*networkingv1.TLSRoute{
						tlsRoute("egress/gw", 15443, "a.example.com", "a.example.com", "", 443),
						tlsRoute("egress/gw", 15443, "b.example.com", "b.example.com", "", 8443),
						tlsRoute("egress/gw", 15443, "c.example.com", "c.example.com", "", 8443),
					},
				},
			},
		},
		{
			reason: "a gateway in the Profile's own namespace is exported as . only",
			cfg: func(c *egress.Config) {
				c.Gateway = "team-a/gw"
				c.Hosts = []egress.ExternalHost{{Host: "api.example.org"}}
			},
			want: &specs{
				Names: []string{"team-a/profilekit-egress", "team-a/profilekit-egress", "team-a/profilekit-egress-mesh", "team-a/profilekit-egress-gateway"},
				ServiceEntry: &networkingv1.ServiceEntry{
					Hosts:      []string{"api.example.org"},
					Ports:      []*networkingv1.ServicePort{{Number: 443, Name: "tls-443", Protocol: "TLS"}},
					Location:   networkingv1.ServiceEntry_MESH_EXTERNAL,
					Resolution: networkingv1.ServiceEntry_DNS,
					ExportTo:   []string{"."},
				},
				DestinationRule: &networkingv1.DestinationRule{Host: gwSvc, Subsets: []*networkingv1.Subset{{Name: "profilekit-egress"}}, ExportTo: []string{"."}},
				MeshRoute: &networkingv1.VirtualService{
					Hosts: []string{"api.example.org"}, Gateways: []string{"mesh"}, ExportTo: []string{"."},
					Tls: []*networkingv1.TLSRoute{tlsRoute("mesh", 443, "api.example.org", gwSvc, "profilekit-egress", 443)},
				},
				GatewayRoute: &networkingv1.VirtualService{
					Hosts: []string{"api.example.org"}, Gateways: []string{"team-a/gw"}, ExportTo: []string{"."},
					Tls: []*networkingv1.TLSRoute{tlsRoute("team-a/gw", 443, "api.example.org", "api.example.org", "", 443)},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg := egress.NewConfig()
			tt.cfg(cfg)
			objs := egress.Build(cfg, profile("team-a", nil))
			var got *specs
			if objs != nil {
				got = &specs{
					ServiceEntry: objs.ServiceEntry.Spec, DestinationRule: objs.DestinationRule.Spec,
					MeshRoute: objs.MeshRoute.Spec, GatewayRoute: objs.GatewayRoute.Spec,
					Names: []string{
						*objs.ServiceEntry.Namespace + "/" + *objs.ServiceEntry.Name,
						*objs.DestinationRule.Namespace + "/" + *objs.DestinationRule.Name,
						*objs.MeshRoute.Namespace + "/" + *objs.MeshRoute.Name,
						*objs.GatewayRoute.Namespace + "/" + *objs.GatewayRoute.Name,
					},
				}
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	spec := func(s string) kubeflowv1.Plugin {
		return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: egress.Kind}, Spec: &runtime.RawExtension{Raw: []byte(s)}}
	}
	tests := []struct {
		reason   string
		defaults string
		spec     string
		wantErr  []string
	}{
		{reason: "a Profile may choose hosts and enable itself", spec: `{"enabled":true,"hosts":[{"host":"api.example.org"}]}`},
		{reason: "the lowest and the highest port are ports", defaults: `{"gatewayPort":65535}`,
			spec: `{"hosts":[{"host":"a.example.org","port":1},{"host":"b.example.org","port":65535}]}`},
		{reason: "allowed hosts match exactly or by domain", defaults: `{"allowedHosts":["api.example.org","*.example.com"]}`,
			spec: `{"hosts":[{"host":"api.example.org"},{"host":"deep.s3.example.com"}]}`},
		{reason: "a wildcard entry does not match its bare domain", defaults: `{"allowedHosts":["*.example.com"]}`,
			spec: `{"hosts":[{"host":"example.com"}]}`, wantErr: []string{`hosts[0]: host "example.com" is not among the allowed hosts`}},
		{reason: "a Profile may not widen its own allowed hosts", spec: `{"allowedHosts":["*"]}`,
			wantErr: []string{`field "allowedHosts" is set by the host only`}},
		{reason: "a Profile may not pick the gateway", spec: `{"gateway":"mine/gw"}`,
			wantErr: []string{`field "gateway" is set by the host only`}},
		{reason: "a host twice, a wildcard host and a bad port are all reported", spec: `{"hosts":[{"host":"a.example.org"},{"host":"a.example.org","port":8443},{"host":"*.example.org"},{"host":"b.example.org","port":70000}]}`,
			wantErr: []string{`hosts[1]: host "a.example.org" is listed twice`, `hosts[2]: host "*.example.org"`, `hosts[3]: port: 70000 is not between 1 and 65535`}},
		{reason: "bad host config is reported field by field", defaults: `{"gateway":"istio-egressgateway","gatewayPort":0,"gateLabel":"not a label","name":"kf-resource-quota"}`,
			wantErr: []string{`gateway "istio-egressgateway": want <namespace>/<name>`, `gatewayPort: 0 is not between`, `gateLabel "not a label"`, `name "kf-resource-quota" belongs to the upstream profile controller`}},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			var ps []kubeflowv1.Plugin
			if tt.spec != "" {
				ps = append(ps, spec(tt.spec))
			}
			_, err := egress.Definition().Decode([]byte(tt.defaults), profile("team-a", nil, ps...))
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("error = %v, want none", err)
				}
				return
			}
			if !plugins.IsTerminal(err) {
				t.Errorf("error %v is not terminal", err)
			}
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error = %v, want one containing %q", err, want)
				}
			}
		})
	}
}
