package gitea

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/plugins/expose"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "gitea"

// SSL modes the plugin connects with.
const (
	// SSLVerifyFull encrypts and checks the server's certificate and name
	// against the CA. The default.
	SSLVerifyFull = "verify-full"
	// SSLDisable connects in plain text; only when the host says so.
	SSLDisable = "disable"
)

// Built-in defaults.
const (
	DefaultPort      = 5432
	DefaultEncoding  = "UTF8"
	DefaultLocale    = "C"
	DefaultTemplate  = "template0"
	DefaultService   = "gitea-http"
	DefaultHTTPPort  = 3000
	DefaultDSNKey    = "dsn"
	DefaultCAKey     = "ca.crt"
	DefaultGatewayNS = "istio-system"
)

// Config is the gitea plugin's configuration. Everything is the host's but
// Enable, with which a Profile picks instances (besides opt-in labels).
type Config struct {
	// ArgoCD says where the Applications live.
	ArgoCD apps.ArgoCD `json:"argocd,omitempty" profilekit:"hostonly"`
	// Routing is where the routes are served.
	Routing apps.Routing `json:"routing,omitempty" profilekit:"hostonly"`
	// RootURL is the public URL of the Kubeflow front door; Gitea's ROOT_URL
	// is RootURL + /<prefix>/<namespace>/.
	RootURL string `json:"rootURL" profilekit:"hostonly"`
	// Instances are the Giteas a Profile may have, such as unclassified
	// and protected-b, each with its own database server.
	Instances []Instance `json:"instances,omitempty" profilekit:"hostonly"`
	// Enable names the instances the Profile wants, besides those whose
	// opt-in label it carries.
	Enable []string `json:"enable,omitempty"`
}

// Instance is one classified Gitea per Profile.
type Instance struct {
	// Name is the classification, such as unclassified; it names the
	// Application, route, policy and Secret.
	Name string `json:"name"`
	// OptInLabel is a Profile label key that, set to true, enables it.
	OptInLabel string `json:"optInLabel,omitempty"`
	// Prefix is the first path segment of the route. Default gitea-<name>.
	Prefix string `json:"prefix,omitempty"`
	// Source is the Gitea chart (and any values of the host's); the plugin
	// adds the database, ROOT_URL and no-admin values over it.
	Source apps.Source `json:"source"`
	// Project overrides argocd.project.
	Project string `json:"project,omitempty"`
	// SyncPolicy, default automated with prune and selfHeal.
	SyncPolicy *apps.SyncPolicy `json:"syncPolicy,omitempty"`
	// Service and Port are Gitea's HTTP Service, as the chart names it
	// (release name <namespace>-<instance> unless the source sets one).
	Service string `json:"service,omitempty"`
	Port    uint32 `json:"port,omitempty"`
	// PodSelector selects the Gitea pods the NetworkPolicy admits the
	// ingress gateway to. Default app.kubernetes.io/name=gitea.
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`
	// Gateway is where the ingress gateway's pods run.
	Gateway Gateway `json:"gateway,omitempty"`
	// Database is the PostgreSQL server the instance's databases live on.
	Database Database `json:"database"`
	// Banner, when set, is shown at the top of every page of the
	// instance's Gitea, such as its classification.
	Banner *Banner `json:"banner,omitempty"`
	// Placement puts the instance's pods on the nodes of its
	// classification.
	Placement Placement `json:"placement,omitempty"`
}

// Gateway selects the ingress gateway's pods.
type Gateway struct {
	// Namespace of the gateway. Default istio-system.
	Namespace string `json:"namespace,omitempty"`
	// PodLabels select its pods. Default istio=ingressgateway.
	PodLabels map[string]string `json:"podLabels,omitempty"`
}

// SecretKey names one key of a Secret.
type SecretKey struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Key       string `json:"key,omitempty"`
}

// Database is a PostgreSQL server and how databases are made on it.
type Database struct {
	// Host and Port Gitea connects to. A host outside the cluster gets an
	// Istio ServiceEntry in the Profile's namespace.
	Host string `json:"host"`
	Port uint32 `json:"port,omitempty"`
	// AdminDSN is the Secret key that holds the administrator's connection
	// URL (postgres://user:password@host:port/db). The Secret must carry
	// the label app.kubernetes.io/managed-by=profilekit, which the host's
	// cache keeps. Its host may differ from Host (a private endpoint).
	AdminDSN SecretKey `json:"adminDSN"`
	// SSLMode is verify-full (default) or disable.
	SSLMode string `json:"sslMode,omitempty"`
	// CA is the Secret key that holds the PEM of the CA that signs the
	// server's certificate, for verify-full. Labelled as AdminDSN.
	CA *SecretKey `json:"ca,omitempty"`
	// NamePrefix starts every role and database name, before the
	// namespace (see Name). Required: a lower-case letter, then lower-case
	// letters, digits, _ or -, ending with _, at most 32 bytes, such as
	// gitea_. Two instances on one server need prefixes of which neither
	// starts the other.
	NamePrefix string `json:"namePrefix,omitempty"`
	// Encoding, LCCollate, LCCtype and Template of new databases. Default
	// UTF8, C, C and template0, which every PostgreSQL accepts whatever
	// locales its machine has.
	Encoding  string `json:"encoding,omitempty"`
	LCCollate string `json:"lcCollate,omitempty"`
	LCCtype   string `json:"lcCtype,omitempty"`
	Template  string `json:"template,omitempty"`
	// RotateLostPassword is accepted and changes nothing: the host keeps
	// every role's password and writes a lost Secret again with it.
	//
	// Deprecated: the Secret in the Profile's namespace is output only.
	RotateLostPassword bool `json:"rotateLostPassword,omitempty"`
	// Adopt lets the plugin take over a role and database with the names
	// a Profile wants that it did not make, such as a role the first
	// release made (no comment): it gives the role a new password (kept by
	// the host), makes it the database's owner and marks both as the
	// Profile's (see Proof). Host only, as every field of Instances. Never a role with SUPERUSER,
	// CREATEROLE, BYPASSRLS or REPLICATION, nor one that is a member of
	// other roles. Without it such names are a Conflict and left untouched.
	Adopt bool `json:"adopt,omitempty"`
	// ServiceEntry writes an Istio ServiceEntry for Host. Default: when
	// Host is not a Service of the cluster.
	ServiceEntry *bool `json:"serviceEntry,omitempty"`
}

// NewConfig returns the built-in defaults, routing defaults from the
// process environment as the expose plugin reads them.
func NewConfig() *Config { return ConfigFromEnv(os.LookupEnv) }

// ConfigFromEnv returns the built-in defaults with routing defaults read
// through lookup.
func ConfigFromEnv(lookup func(string) (string, bool)) *Config {
	e := expose.ConfigFromEnv(lookup)
	return &Config{
		ArgoCD: apps.ArgoCD{Namespace: apps.DefaultArgoCDNamespace, Project: apps.DefaultProject, Server: apps.DefaultServer},
		Routing: apps.Routing{
			Gateways:      slices.Clone(e.Gateways),
			Hosts:         slices.Clone(e.Hosts),
			ClusterDomain: e.ClusterDomain,
		},
	}
}

// withDefaults returns the instance with every default filled in.
func (in Instance) withDefaults() Instance {
	if in.Prefix == "" {
		in.Prefix = "gitea-" + in.Name
	}
	if in.Service == "" {
		in.Service = DefaultService
	}
	if in.Port == 0 {
		in.Port = DefaultHTTPPort
	}
	if in.PodSelector == nil {
		in.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "gitea"}}
	}
	if in.Gateway.Namespace == "" {
		in.Gateway.Namespace = DefaultGatewayNS
	}
	if len(in.Gateway.PodLabels) == 0 {
		in.Gateway.PodLabels = map[string]string{"istio": "ingressgateway"}
	}
	in.Banner = in.Banner.withDefaults()
	d := &in.Database
	if d.Port == 0 {
		d.Port = DefaultPort
	}
	if d.SSLMode == "" {
		d.SSLMode = SSLVerifyFull
	}
	if d.AdminDSN.Key == "" {
		d.AdminDSN.Key = DefaultDSNKey
	}
	if d.CA != nil && d.CA.Key == "" {
		ca := *d.CA
		ca.Key = DefaultCAKey
		d.CA = &ca
	}
	if d.Encoding == "" {
		d.Encoding = DefaultEncoding
	}
	if d.LCCollate == "" {
		d.LCCollate = DefaultLocale
	}
	if d.LCCtype == "" {
		d.LCCtype = DefaultLocale
	}
	if d.Template == "" {
		d.Template = DefaultTemplate
	}
	return in
}

// instances returns the instances with defaults filled in.
func (c *Config) instances() []Instance {
	out := make([]Instance, len(c.Instances))
	for i, in := range c.Instances {
		out[i] = in.withDefaults()
	}
	return out
}

// settingRE is what encodings, locales and template names may hold; they
// are quoted anyway, but a value such as en_US.UTF-8 never needs more.
var settingRE = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,63}$`)

// Validate checks every instance; the errors name the field and value.
func (c *Config) Validate() error {
	var errs []error
	if c.RootURL == "" && len(c.Instances) > 0 {
		errs = append(errs, errors.New("rootURL: required, Gitea's ROOT_URL is built from it"))
	}
	names := map[string]bool{}
	servers := map[string][]Instance{}
	for i, in := range c.instances() {
		at := field.NewPath("instances").Index(i)
		if in.Name != "" {
			at = field.NewPath("instances").Key(in.Name)
		}
		if names[in.Name] {
			errs = append(errs, fmt.Errorf("%s: name is used twice", at))
		}
		names[in.Name] = true
		if msgs := validation.IsDNS1123Label(in.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: name %q: %s", at, in.Name, strings.Join(msgs, "; ")))
		}
		d := in.Database
		server := net.JoinHostPort(d.Host, fmt.Sprint(d.Port))
		for _, other := range servers[server] {
			switch o := other.Database.NamePrefix; {
			case o == d.NamePrefix:
				errs = append(errs, fmt.Errorf("%s: database %s with namePrefix %q is also instance %s's: role and database names would collide", at, server, d.NamePrefix, other.Name))
			case strings.HasPrefix(d.NamePrefix, o) || strings.HasPrefix(o, d.NamePrefix):
				errs = append(errs, fmt.Errorf("%s: database %s with namePrefix %q starts with instance %s's %q: role and database names would collide", at, server, d.NamePrefix, other.Name, o))
			}
		}
		servers[server] = append(servers[server], in)
		if err := d.validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at.Child("database"), err))
		}
		if err := in.Banner.validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at.Child("banner"), err))
		}
		if err := in.Placement.validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at.Child("placement"), err))
		}
	}
	for i, n := range c.Enable {
		if !names[n] {
			errs = append(errs, fmt.Errorf("%s %q: no such instance", field.NewPath("enable").Index(i), n))
		}
	}
	if len(errs) == 0 {
		// The apps config built from ours checks sources, routes and policies.
		if err := c.appsConfig(nil).Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (d Database) validate() error {
	var errs []error
	if d.Host == "" || strings.ContainsAny(d.Host, " /:@") && net.ParseIP(d.Host) == nil {
		errs = append(errs, fmt.Errorf("host %q: a host name or IP address is required", d.Host))
	}
	if d.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d is not between 1 and 65535", d.Port))
	}
	if err := d.AdminDSN.validate(field.NewPath("adminDSN")); err != nil {
		errs = append(errs, err)
	}
	switch d.SSLMode {
	case SSLVerifyFull:
		if d.CA == nil {
			errs = append(errs, errors.New("ca: required with sslMode verify-full"))
		} else if err := d.CA.validate(field.NewPath("ca")); err != nil {
			errs = append(errs, err)
		}
	case SSLDisable:
	default:
		errs = append(errs, fmt.Errorf("sslMode %q: want %s or %s", d.SSLMode, SSLVerifyFull, SSLDisable))
	}
	switch {
	case d.NamePrefix == "":
		errs = append(errs, errors.New(`namePrefix "": required, so that no role or database is named after a namespace alone`))
	case len(d.NamePrefix) > MaxNamePrefix || !namePrefixRE.MatchString(d.NamePrefix):
		errs = append(errs, fmt.Errorf("namePrefix %q: want a lower-case letter, then letters, digits, _ or -, ending with _, at most %d bytes", d.NamePrefix, MaxNamePrefix))
	}
	for _, s := range []struct{ field, v string }{{"encoding", d.Encoding}, {"lcCollate", d.LCCollate}, {"lcCtype", d.LCCtype}, {"template", d.Template}} {
		if !settingRE.MatchString(s.v) {
			errs = append(errs, fmt.Errorf("%s %q: want letters, digits and _ . @ -", s.field, s.v))
		}
	}
	return errors.Join(errs...)
}

func (k SecretKey) validate(at *field.Path) error {
	var errs []error
	if msgs := validation.IsDNS1123Label(k.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("%s %q: %s", at.Child("namespace"), k.Namespace, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1123Subdomain(k.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("%s %q: %s", at.Child("name"), k.Name, strings.Join(msgs, "; ")))
	}
	return errors.Join(errs...)
}

// serviceEntry reports whether the instance's database host gets a
// ServiceEntry: when asked, or by default when it is not a cluster Service.
func (d Database) serviceEntry(clusterDomain string) bool {
	if d.ServiceEntry != nil {
		return *d.ServiceEntry
	}
	return !(strings.HasSuffix(d.Host, ".svc") || strings.HasSuffix(d.Host, ".svc."+clusterDomain))
}

// ApplicationNamespace returns the namespace the plugin keeps Applications
// in, so that a host can narrow its cache (and its rights) to it.
func (c *Config) ApplicationNamespace() string { return c.ArgoCD.Namespace }
