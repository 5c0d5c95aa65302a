package expose

import (
	"errors"
	"fmt"
	"slices"

	networkingv1 "istio.io/api/networking/v1"
	istioac "istio.io/client-go/pkg/applyconfiguration/networking/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Route is one HTTP route from a path prefix to a Service port.
type Route struct {
	// Name names the route in the VirtualService.
	Name string
	// PathPrefix is matched against the request path; it starts and ends
	// with a slash.
	PathPrefix string
	// Service and Namespace name the destination Service.
	Service   string
	Namespace string
	// Port is the destination Service port.
	Port uint32
	// RewriteToRoot replaces PathPrefix with "/" before the request is sent on.
	RewriteToRoot bool
	// RequestHeaders are rendered with the PathPrefixes given to HTTPRoute.
	RequestHeaders *HeaderOperations
}

// PathPrefixes maps route ids to their path prefixes, for httpPathPrefix.
type PathPrefixes map[string]string

// ServiceHost returns the fully qualified host of a Service.
func ServiceHost(service, namespace, clusterDomain string) string {
	return service + "." + namespace + ".svc." + clusterDomain
}

// HTTPRoute returns the Istio HTTP route for r: a prefix match on
// r.PathPrefix, the optional rewrite to "/", the rendered request headers, and
// the destination Service port. A header template that does not parse or
// execute is an error naming the header; no route is returned then.
func HTTPRoute(r Route, clusterDomain string, prefixes PathPrefixes) (*networkingv1.HTTPRoute, error) {
	hr := &networkingv1.HTTPRoute{
		Name: r.Name,
		Match: []*networkingv1.HTTPMatchRequest{{
			Uri: &networkingv1.StringMatch{MatchType: &networkingv1.StringMatch_Prefix{Prefix: r.PathPrefix}},
		}},
		Route: []*networkingv1.HTTPRouteDestination{{
			Destination: &networkingv1.Destination{
				Host: ServiceHost(r.Service, r.Namespace, clusterDomain),
				Port: &networkingv1.PortSelector{Number: r.Port},
			},
		}},
	}
	if r.RewriteToRoot {
		hr.Rewrite = &networkingv1.HTTPRewrite{Uri: "/"}
	}
	ops, err := RenderHeaders(r.RequestHeaders, prefixes)
	if err != nil {
		return nil, fmt.Errorf("requestHeaders: %w", err)
	}
	if ops != nil {
		hr.Headers = &networkingv1.Headers{Request: ops}
	}
	return hr, nil
}

// routes returns the HTTP routes of every app in namespace ns, by app.
func (c *Config) routes(ns string) ([][]*networkingv1.HTTPRoute, error) {
	prefixes := make(PathPrefixes, len(c.Apps))
	for _, a := range c.Apps {
		prefixes[a.Name] = a.PathPrefix(ns)
	}
	out := make([][]*networkingv1.HTTPRoute, 0, len(c.Apps))
	var errs []error
	for _, a := range c.Apps {
		var rs []*networkingv1.HTTPRoute
		if a.DashboardRedirect {
			rs = append(rs, dashboardRedirect(a, ns))
		}
		hr, err := HTTPRoute(Route{
			Name:           a.Name,
			PathPrefix:     a.PathPrefix(ns),
			Service:        a.Service,
			Namespace:      ns,
			Port:           a.Port,
			RewriteToRoot:  a.RewriteToRoot,
			RequestHeaders: a.RequestHeaders,
		}, c.ClusterDomain, prefixes)
		if err != nil {
			errs = append(errs, fmt.Errorf("apps[%s]: %w", a.Name, err))
			continue
		}
		out = append(out, append(rs, hr))
	}
	return out, errors.Join(errs...)
}

// dashboardRedirect sends the central dashboard's form of a link,
// /<prefix>/?ns=<namespace>, to the app's own path for that namespace. The
// query match keeps the routes of different Profiles apart on a shared host.
func dashboardRedirect(a App, ns string) *networkingv1.HTTPRoute {
	return &networkingv1.HTTPRoute{
		Name: a.Name + "-dashboard",
		Match: []*networkingv1.HTTPMatchRequest{{
			Uri: &networkingv1.StringMatch{MatchType: &networkingv1.StringMatch_Exact{Exact: "/" + a.prefix() + "/"}},
			QueryParams: map[string]*networkingv1.StringMatch{
				"ns": {MatchType: &networkingv1.StringMatch_Exact{Exact: ns}},
			},
		}},
		Redirect: &networkingv1.HTTPRedirect{Uri: a.PathPrefix(ns)},
	}
}

// Build returns one VirtualService per app for Profile p, in the Profile's
// namespace. A header template that fails is a terminal InvalidSpec error.
func Build(cfg *Config, p *kubeflowv1.Profile) ([]*istioac.VirtualServiceApplyConfiguration, error) {
	ns := plugins.Namespace(p)
	routes, err := cfg.routes(ns)
	if err != nil {
		return nil, plugins.Terminal(plugins.ReasonInvalidSpec, fmt.Errorf("plugin %s: %w", Kind, err))
	}
	out := make([]*istioac.VirtualServiceApplyConfiguration, 0, len(cfg.Apps))
	for i, a := range cfg.Apps {
		vs := istioac.VirtualService(a.Name, ns)
		vs.Spec = &networkingv1.VirtualService{
			Hosts:    slices.Clone(cfg.Hosts),
			Gateways: slices.Clone(cfg.Gateways),
			Http:     routes[i],
		}
		out = append(out, vs)
	}
	return out, nil
}
