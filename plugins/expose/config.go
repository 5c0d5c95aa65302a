package expose

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "expose"

// The environment variables the upstream controllers read for the same values.
const (
	EnvGateway       = "ISTIO_GATEWAY"
	EnvHosts         = "ISTIO_HOSTS"
	EnvHost          = "ISTIO_HOST"
	EnvClusterDomain = "CLUSTER_DOMAIN"
)

// Built-in defaults, used when neither the environment nor the host config
// says otherwise.
const (
	DefaultGateway       = "kubeflow/kubeflow-gateway"
	DefaultHost          = "*"
	DefaultClusterDomain = "cluster.local"
)

// Config is the expose plugin's configuration. A Profile may set Apps; the
// gateways, hosts and cluster domain are the host's.
type Config struct {
	// Gateways the VirtualServices bind to, as <namespace>/<name>.
	// Default from ISTIO_GATEWAY, else kubeflow/kubeflow-gateway.
	Gateways []string `json:"gateways,omitempty" profilekit:"hostonly"`
	// Hosts the VirtualServices serve. Default from ISTIO_HOSTS (or
	// ISTIO_HOST), comma-separated, else "*".
	Hosts []string `json:"hosts,omitempty" profilekit:"hostonly"`
	// ClusterDomain completes service host names. Default from
	// CLUSTER_DOMAIN, else cluster.local.
	ClusterDomain string `json:"clusterDomain,omitempty" profilekit:"hostonly"`
	// Apps are the applications exposed for the Profile, one VirtualService
	// each.
	Apps []App `json:"apps,omitempty"`
}

// App is one application served under /<prefix>/<namespace>/.
type App struct {
	// Name names the VirtualService and is the id httpPathPrefix takes.
	Name string `json:"name"`
	// Prefix is the first path segment. Default Name.
	Prefix string `json:"prefix,omitempty"`
	// Service is the name of the Service in the Profile's namespace.
	Service string `json:"service"`
	// Port is the Service port traffic goes to.
	Port uint32 `json:"port"`
	// RewriteToRoot makes the application see /... instead of
	// /<prefix>/<namespace>/..., for applications that serve relative URLs.
	RewriteToRoot bool `json:"rewriteToRoot,omitempty"`
	// DashboardRedirect redirects the central dashboard's link form
	// /<prefix>/?ns=<namespace> to /<prefix>/<namespace>/.
	DashboardRedirect bool `json:"dashboardRedirect,omitempty"`
	// RequestHeaders change the request on its way to the application.
	// Values are templates; see HeaderOperations.
	RequestHeaders *HeaderOperations `json:"requestHeaders,omitempty"`
}

// PathPrefix returns the app's path prefix in namespace ns.
func (a App) PathPrefix(ns string) string {
	return "/" + a.prefix() + "/" + ns + "/"
}

func (a App) prefix() string {
	if a.Prefix != "" {
		return a.Prefix
	}
	return a.Name
}

// NewConfig returns a Config holding the built-in defaults.
func NewConfig() *Config {
	return &Config{
		Gateways:      []string{DefaultGateway},
		Hosts:         []string{DefaultHost},
		ClusterDomain: DefaultClusterDomain,
	}
}

// ConfigFromEnv returns the built-in defaults with the values of the
// environment variables ISTIO_GATEWAY, ISTIO_HOSTS (or ISTIO_HOST) and
// CLUSTER_DOMAIN on top, read through lookup (os.LookupEnv in a host). The
// host's config is decoded over the result, so it wins over the environment.
// An empty variable counts as unset.
func ConfigFromEnv(lookup func(string) (string, bool)) *Config {
	c := NewConfig()
	get := func(key string) string {
		v, _ := lookup(key)
		return strings.TrimSpace(v)
	}
	if v := splitList(get(EnvGateway)); len(v) > 0 {
		c.Gateways = v
	}
	hosts := splitList(get(EnvHosts))
	if len(hosts) == 0 {
		hosts = splitList(get(EnvHost))
	}
	if len(hosts) > 0 {
		c.Hosts = hosts
	}
	if v := get(EnvClusterDomain); v != "" {
		c.ClusterDomain = v
	}
	return c
}

// ConfigFromProcessEnv is ConfigFromEnv over the process environment.
func ConfigFromProcessEnv() *Config { return ConfigFromEnv(os.LookupEnv) }

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// Validate checks names, gateways and hosts, and parses and executes every
// header template, so that a broken template is reported when the config is
// loaded and never reaches an object.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Gateways) == 0 {
		errs = append(errs, errors.New("gateways: at least one is required"))
	}
	for i, gw := range c.Gateways {
		if err := validateGateway(gw); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", field.NewPath("gateways").Index(i), gw, err))
		}
	}
	if len(c.Hosts) == 0 {
		errs = append(errs, errors.New("hosts: at least one is required"))
	}
	for i, h := range c.Hosts {
		if h == "" || strings.ContainsAny(h, " /") {
			errs = append(errs, fmt.Errorf("%s %q: not a host name", field.NewPath("hosts").Index(i), h))
		}
	}
	if msgs := validation.IsDNS1123Subdomain(c.ClusterDomain); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("clusterDomain %q: %s", c.ClusterDomain, strings.Join(msgs, "; ")))
	}
	names := map[string]bool{}
	prefixes := map[string]bool{}
	for i, a := range c.Apps {
		at := field.NewPath("apps").Index(i)
		if a.Name != "" {
			at = field.NewPath("apps").Key(a.Name)
		}
		errs = append(errs, validateApp(at, a)...)
		if names[a.Name] {
			errs = append(errs, fmt.Errorf("%s: name is used twice", at))
		}
		if prefixes[a.prefix()] {
			errs = append(errs, fmt.Errorf("%s: prefix %q is used twice", at, a.prefix()))
		}
		names[a.Name], prefixes[a.prefix()] = true, true
	}
	if len(errs) == 0 {
		// Any namespace shows whether the templates execute: the namespace
		// changes the paths they produce, not whether they fail.
		if _, err := c.routes("namespace"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func validateGateway(gw string) error {
	if gw == MeshGateway {
		return nil
	}
	ns, name, ok := strings.Cut(gw, "/")
	if !ok {
		return errors.New("want <namespace>/<name>")
	}
	var msgs []string
	msgs = append(msgs, validation.IsDNS1123Label(ns)...)
	msgs = append(msgs, validation.IsDNS1123Subdomain(name)...)
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

func validateApp(at *field.Path, a App) []error {
	var errs []error
	if msgs := validation.IsDNS1123Label(a.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("%s: name %q: %s", at, a.Name, strings.Join(msgs, "; ")))
	}
	if plugins.IsUpstreamName(a.Name) {
		errs = append(errs, fmt.Errorf("%s: name %q belongs to the upstream profile controller", at, a.Name))
	}
	if a.Prefix != "" {
		if msgs := validation.IsDNS1123Label(a.Prefix); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: prefix %q: %s", at, a.Prefix, strings.Join(msgs, "; ")))
		}
	}
	if msgs := validation.IsDNS1123Label(a.Service); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("%s: service %q: %s", at, a.Service, strings.Join(msgs, "; ")))
	}
	if a.Port == 0 || a.Port > 65535 {
		errs = append(errs, fmt.Errorf("%s: port %d is not between 1 and 65535", at, a.Port))
	}
	if a.RequestHeaders != nil {
		if err := a.RequestHeaders.validateNames(); err != nil {
			errs = append(errs, fmt.Errorf("%s: requestHeaders: %w", at, err))
		}
	}
	return errs
}

// MeshGateway is Istio's name for the sidecars of the mesh as a gateway.
const MeshGateway = "mesh"
