package apps

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/expose"
	"github.com/profilekit/profilekit/plugins/network"
	"github.com/profilekit/profilekit/plugins/placeholders"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "apps"

// Built-in defaults.
const (
	DefaultArgoCDNamespace = "argocd"
	DefaultProject         = "default"
	// DefaultServer is the API server Argo CD runs in, as Argo CD names it.
	DefaultServer = "https://kubernetes.default.svc"
)

// The placeholders app values may use besides {{ .Namespace }},
// {{ .Profile }} and {{ .Owner }}.
const (
	// PlaceholderRootURL is the host's public root URL (Config.RootURL).
	PlaceholderRootURL = "RootURL"
	// PlaceholderAppURL is the root URL plus the app's path prefix,
	// /<prefix>/<namespace>/.
	PlaceholderAppURL = "AppURL"
)

var placeholderNames = []string{
	placeholders.Namespace, placeholders.Profile, placeholders.Owner,
	PlaceholderRootURL, PlaceholderAppURL,
}

// Config is the apps plugin's configuration. The apps and everything about
// how they are deployed are the host's; a Profile chooses which of them it
// wants through Enable (or through each app's opt-in label).
type Config struct {
	// ArgoCD says where Applications live and what they deploy into.
	ArgoCD ArgoCD `json:"argocd,omitempty" profilekit:"hostonly"`
	// Routing is where app routes are served.
	Routing Routing `json:"routing,omitempty" profilekit:"hostonly"`
	// RootURL is the public URL of the Kubeflow front door, such as
	// https://kubeflow.example.org; {{ .RootURL }} and {{ .AppURL }} take it.
	RootURL string `json:"rootURL,omitempty" profilekit:"hostonly"`
	// Apps are the applications a Profile may have.
	Apps []App `json:"apps,omitempty" profilekit:"hostonly"`
	// Enable names the apps the Profile wants, besides those whose opt-in
	// label it carries.
	Enable []string `json:"enable,omitempty"`
}

// ArgoCD holds where Applications are written.
type ArgoCD struct {
	// Namespace Argo CD watches for Applications. Default argocd.
	Namespace string `json:"namespace,omitempty"`
	// Project of every Application unless an app names its own. Default
	// "default".
	Project string `json:"project,omitempty"`
	// Server is the destination cluster's API server. Default
	// https://kubernetes.default.svc, the cluster Argo CD runs in.
	Server string `json:"server,omitempty"`
}

// Routing holds the gateways and hosts app routes are served on, as the
// expose plugin has them.
type Routing struct {
	Gateways      []string `json:"gateways,omitempty"`
	Hosts         []string `json:"hosts,omitempty"`
	ClusterDomain string   `json:"clusterDomain,omitempty"`
}

// App is one application deployed into each Profile that enables it.
type App struct {
	// Name names the app; the Application is <namespace>.<name> (see
	// ApplicationName).
	Name string `json:"name"`
	// OptInLabel is a Profile label key; a Profile with it set to true gets
	// the app. Values that are not booleans are reported and change nothing.
	OptInLabel string `json:"optInLabel,omitempty"`
	// Project overrides ArgoCD.Project for this app.
	Project string `json:"project,omitempty"`
	// Source is what Argo CD deploys.
	Source Source `json:"source"`
	// SyncPolicy is Argo CD's sync policy; default automated with prune and
	// selfHeal.
	SyncPolicy *SyncPolicy `json:"syncPolicy,omitempty"`
	// Route, when set, serves the app under /<prefix>/<namespace>/.
	Route *Route `json:"route,omitempty"`
	// NetworkPolicies are written into the Profile's namespace with the app,
	// as the network plugin writes them.
	NetworkPolicies []network.Policy `json:"networkPolicies,omitempty"`
}

// Route serves an app's Service through the ingress gateway, built by the
// expose plugin's route builder.
type Route struct {
	// Prefix is the first path segment. Default the app's name.
	Prefix string `json:"prefix,omitempty"`
	// Service in the Profile's namespace and its Port.
	Service string `json:"service"`
	Port    uint32 `json:"port"`
	// RewriteToRoot makes the app see / instead of /<prefix>/<namespace>/.
	RewriteToRoot bool `json:"rewriteToRoot,omitempty"`
	// DashboardRedirect redirects /<prefix>/?ns=<namespace> to
	// /<prefix>/<namespace>/, the central dashboard's link form.
	DashboardRedirect bool `json:"dashboardRedirect,omitempty"`
}

// NewConfig returns a Config holding the built-in defaults, with routing
// defaults from the process environment as the expose plugin reads them.
func NewConfig() *Config { return newConfig(expose.ConfigFromProcessEnv()) }

func newConfig(e *expose.Config) *Config {
	return &Config{
		ArgoCD: ArgoCD{Namespace: DefaultArgoCDNamespace, Project: DefaultProject, Server: DefaultServer},
		Routing: Routing{
			Gateways:      slices.Clone(e.Gateways),
			Hosts:         slices.Clone(e.Hosts),
			ClusterDomain: e.ClusterDomain,
		},
	}
}

// PathPrefix returns the app's path prefix in namespace ns,
// /<prefix>/<namespace>/.
func (a App) PathPrefix(ns string) string { return "/" + a.prefix() + "/" + ns + "/" }

func (a App) prefix() string {
	if a.Route != nil && a.Route.Prefix != "" {
		return a.Route.Prefix
	}
	return a.Name
}

// App returns the app named name.
func (c *Config) App(name string) (App, bool) {
	i := slices.IndexFunc(c.Apps, func(a App) bool { return a.Name == name })
	if i < 0 {
		return App{}, false
	}
	return c.Apps[i], true
}

// Validate checks the Argo CD settings, every app (names, sources,
// placeholders, routes, policies) and that Enable names declared apps.
func (c *Config) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(c.ArgoCD.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("argocd.namespace %q: %s", c.ArgoCD.Namespace, strings.Join(msgs, "; ")))
	}
	if c.ArgoCD.Project == "" {
		errs = append(errs, errors.New("argocd.project: required"))
	}
	if u, err := url.Parse(c.ArgoCD.Server); err != nil || u.Scheme == "" || u.Host == "" {
		errs = append(errs, fmt.Errorf("argocd.server %q: not an absolute URL", c.ArgoCD.Server))
	}
	if c.RootURL != "" {
		if u, err := url.Parse(c.RootURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("rootURL %q: not an http(s) URL", c.RootURL))
		}
	}
	names := map[string]bool{}
	prefixes := map[string]bool{}
	for i, a := range c.Apps {
		at := field.NewPath("apps").Index(i)
		if a.Name != "" {
			at = field.NewPath("apps").Key(a.Name)
		}
		if names[a.Name] {
			errs = append(errs, fmt.Errorf("%s: name is used twice", at))
		}
		names[a.Name] = true
		if a.Route != nil {
			if prefixes[a.prefix()] {
				errs = append(errs, fmt.Errorf("%s: route prefix %q is used twice", at, a.prefix()))
			}
			prefixes[a.prefix()] = true
		}
		if err := c.validateApp(a); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
		}
	}
	for i, n := range c.Enable {
		if !names[n] {
			errs = append(errs, fmt.Errorf("%s %q: no such app (known: %s)", field.NewPath("enable").Index(i), n, strings.Join(slices.Sorted(mapsKeys(names)), ", ")))
		}
	}
	if len(errs) == 0 {
		// Build once for a sample Profile, so that routes and policies that
		// cannot be built fail when the configuration loads.
		if _, err := build(c, sampleProfile(), c.Apps, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (c *Config) validateApp(a App) error {
	var errs []error
	if msgs := validation.IsDNS1123Label(a.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("name %q: %s", a.Name, strings.Join(msgs, "; ")))
	}
	if plugins.IsUpstreamName(a.Name) {
		errs = append(errs, fmt.Errorf("name %q belongs to the upstream profile controller", a.Name))
	}
	if a.OptInLabel != "" {
		if msgs := validation.IsQualifiedName(a.OptInLabel); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("optInLabel %q: %s", a.OptInLabel, strings.Join(msgs, "; ")))
		}
	}
	if err := a.Source.validate(); err != nil {
		errs = append(errs, fmt.Errorf("source: %w", err))
	}
	if a.SyncPolicy != nil {
		if err := a.SyncPolicy.validate(); err != nil {
			errs = append(errs, fmt.Errorf("syncPolicy: %w", err))
		}
	}
	if r := a.Route; r != nil {
		if r.Prefix != "" {
			if msgs := validation.IsDNS1123Label(r.Prefix); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("route.prefix %q: %s", r.Prefix, strings.Join(msgs, "; ")))
			}
		}
		if msgs := validation.IsDNS1123Label(r.Service); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("route.service %q: %s", r.Service, strings.Join(msgs, "; ")))
		}
		if r.Port == 0 || r.Port > 65535 {
			errs = append(errs, fmt.Errorf("route.port %d is not between 1 and 65535", r.Port))
		}
	}
	if err := (&network.Config{Policies: a.NetworkPolicies}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("networkPolicies: %w", err))
	}
	if a.Route == nil && a.Source.usesAppURL() {
		errs = append(errs, errors.New("source uses {{ .AppURL }}, which needs a route"))
	}
	if c.RootURL == "" && a.Source.usesRootURL() {
		errs = append(errs, errors.New("source uses {{ .RootURL }} or {{ .AppURL }}, which need rootURL"))
	}
	return errors.Join(errs...)
}

// ConfigFromEnv returns the built-in defaults with routing defaults read
// through lookup (ISTIO_GATEWAY, ISTIO_HOSTS or ISTIO_HOST, CLUSTER_DOMAIN).
func ConfigFromEnv(lookup func(string) (string, bool)) *Config {
	return newConfig(expose.ConfigFromEnv(lookup))
}

// ApplicationNamespace returns the namespace the plugin keeps Applications
// in, so that a host can narrow its cache (and its rights) to it.
func (c *Config) ApplicationNamespace() string { return c.ArgoCD.Namespace }
