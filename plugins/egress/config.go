package egress

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "egress"

// Built-in defaults: the names of Istio's own egress gateway install.
const (
	DefaultName           = "profilekit-egress"
	DefaultGateLabel      = "egress.profilekit.dev/enabled"
	DefaultGateway        = "istio-system/istio-egressgateway"
	DefaultGatewayService = "istio-egressgateway.istio-system.svc.cluster.local"
	DefaultGatewayPort    = 443
	DefaultPort           = 443
)

// Config is the egress plugin's configuration. A Profile may set Enabled
// and Hosts; the rest is the host's.
type Config struct {
	// Enabled turns routing on for the Profile when the gate label is absent.
	Enabled bool `json:"enabled,omitempty"`
	// Hosts are the external hosts routed through the egress gateway.
	Hosts []ExternalHost `json:"hosts,omitempty"`

	// Name is the name of the ServiceEntry and DestinationRule, and the start
	// of the VirtualServices' names (<name>-mesh, <name>-gateway).
	// Default profilekit-egress.
	Name string `json:"name,omitempty" profilekit:"hostonly"`
	// GateLabel is the Profile label that turns routing on ("true") or off
	// ("false"); when present it wins over Enabled. Any other value is off
	// and reported. Empty turns the label off. Default
	// egress.profilekit.dev/enabled.
	GateLabel string `json:"gateLabel,omitempty" profilekit:"hostonly"`
	// AllowedHosts bounds Hosts: each host must equal an entry or, for an
	// entry "*.example.org", end in ".example.org". Empty allows any host.
	AllowedHosts []string `json:"allowedHosts,omitempty" profilekit:"hostonly"`
	// Gateway is the Istio Gateway of the egress gateway, <namespace>/<name>.
	// It must have a TLS PASSTHROUGH server on GatewayPort for the hosts.
	// Default istio-system/istio-egressgateway.
	Gateway string `json:"gateway,omitempty" profilekit:"hostonly"`
	// GatewayService is the host of the egress gateway's Service.
	// Default istio-egressgateway.istio-system.svc.cluster.local.
	GatewayService string `json:"gatewayService,omitempty" profilekit:"hostonly"`
	// GatewayPort is the egress gateway's Service port for TLS. Default 443.
	GatewayPort uint32 `json:"gatewayPort,omitempty" profilekit:"hostonly"`
}

// ExternalHost is one host outside the mesh, reached with TLS.
type ExternalHost struct {
	// Host is the DNS name, also the SNI the client sends.
	Host string `json:"host"`
	// Port is the host's TLS port. Default 443.
	Port uint32 `json:"port,omitempty"`
}

func (h ExternalHost) port() uint32 {
	if h.Port == 0 {
		return DefaultPort
	}
	return h.Port
}

// NewConfig returns a Config holding the built-in defaults.
func NewConfig() *Config {
	return &Config{
		Name:           DefaultName,
		GateLabel:      DefaultGateLabel,
		Gateway:        DefaultGateway,
		GatewayService: DefaultGatewayService,
		GatewayPort:    DefaultGatewayPort,
	}
}

// gatewayRef splits Gateway into its namespace and name.
func (c *Config) gatewayRef() (namespace, name string) {
	namespace, name, _ = strings.Cut(c.Gateway, "/")
	return namespace, name
}

// Validate checks names, the gateway, and every host against AllowedHosts.
func (c *Config) Validate() error {
	var errs []error
	// The longest name is the VirtualService <name>-gateway.
	if msgs := validation.IsDNS1123Subdomain(c.Name + "-gateway"); len(msgs) > 0 || c.Name == "" {
		errs = append(errs, fmt.Errorf("name %q: not usable as an object name: %s", c.Name, strings.Join(msgs, "; ")))
	}
	if plugins.IsUpstreamName(c.Name) {
		errs = append(errs, fmt.Errorf("name %q belongs to the upstream profile controller", c.Name))
	}
	if c.GateLabel != "" {
		if msgs := validation.IsQualifiedName(c.GateLabel); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("gateLabel %q: %s", c.GateLabel, strings.Join(msgs, "; ")))
		}
	}
	ns, name := c.gatewayRef()
	if msgs := append(validation.IsDNS1123Label(ns), validation.IsDNS1123Subdomain(name)...); len(msgs) > 0 || !strings.Contains(c.Gateway, "/") {
		errs = append(errs, fmt.Errorf("gateway %q: want <namespace>/<name>", c.Gateway))
	}
	if msgs := validation.IsDNS1123Subdomain(c.GatewayService); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("gatewayService %q: %s", c.GatewayService, strings.Join(msgs, "; ")))
	}
	if err := validPort(c.GatewayPort); err != nil {
		errs = append(errs, fmt.Errorf("gatewayPort: %w", err))
	}
	for i, pattern := range c.AllowedHosts {
		if msgs := validation.IsDNS1123Subdomain(strings.TrimPrefix(pattern, "*.")); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: want a host name or *.<domain>", field.NewPath("allowedHosts").Index(i), pattern))
		}
	}
	seen := map[string]bool{}
	for i, h := range c.Hosts {
		f := field.NewPath("hosts").Index(i)
		if msgs := validation.IsDNS1123Subdomain(h.Host); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: host %q: %s", f, h.Host, strings.Join(msgs, "; ")))
			continue
		}
		if err := validPort(h.port()); err != nil {
			errs = append(errs, fmt.Errorf("%s: port: %w", f, err))
		}
		if seen[h.Host] {
			// The gateway tells hosts apart by SNI alone, so one host
			// cannot go to two ports.
			errs = append(errs, fmt.Errorf("%s: host %q is listed twice", f, h.Host))
		}
		seen[h.Host] = true
		if len(c.AllowedHosts) > 0 && !slices.ContainsFunc(c.AllowedHosts, func(p string) bool { return matchHost(p, h.Host) }) {
			errs = append(errs, fmt.Errorf("%s: host %q is not among the allowed hosts %v", f, h.Host, c.AllowedHosts))
		}
	}
	return errors.Join(errs...)
}

func validPort(p uint32) error {
	if p == 0 || p > 65535 {
		return fmt.Errorf("%d is not between 1 and 65535", p)
	}
	return nil
}

// matchHost reports whether host equals pattern or, for a pattern
// "*.<domain>", lies under that domain.
func matchHost(pattern, host string) bool {
	if domain, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(host, "."+domain)
	}
	return pattern == host
}
