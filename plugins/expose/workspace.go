package expose

// This file holds the routes of Kubeflow Notebooks 2.0 workspaces: the
// HTTP routes of a Workspace's ports, built from what a Workspace and its
// WorkspaceKind say.

import (
	"errors"
	"fmt"

	networkingv1 "istio.io/api/networking/v1"
)

// Workspace is what WorkspaceHTTPRoutes needs of a Kubeflow Notebooks 2.0
// Workspace and its WorkspaceKind.
type Workspace struct {
	// Namespace and Name of the Workspace.
	Namespace string
	Name      string
	// Service is the name of the Service in front of the Workspace's Pod.
	Service string
	// Ports are the WorkspaceKind's HTTP ports with their numbers from the
	// chosen image config.
	Ports []WorkspacePort
}

// WorkspacePort is one HTTP port of a Workspace.
type WorkspacePort struct {
	// ID names the port in its path and for httpPathPrefix.
	ID string `json:"id"`
	// Port is the Service port.
	Port uint32 `json:"port"`
	// HTTPProxy says how requests reach the port; nil keeps the path and
	// headers as they are.
	HTTPProxy *HTTPProxy `json:"httpProxy,omitempty"`
}

// HTTPProxy is the proxy setting of one workspace port.
type HTTPProxy struct {
	// RemovePathPrefix makes the application see /... instead of the
	// workspace connect path.
	RemovePathPrefix bool `json:"removePathPrefix,omitempty"`
	// RequestHeaders change requests on their way to the port.
	RequestHeaders *HeaderOperations `json:"requestHeaders,omitempty"`
}

// WorkspaceConnectPath returns the path prefix of one port of a workspace:
// /workspace/connect/<namespace>/<workspace>/<portID>/.
func WorkspaceConnectPath(namespace, workspace, portID string) string {
	return "/workspace/connect/" + namespace + "/" + workspace + "/" + portID + "/"
}

// WorkspaceHTTPRoutes returns one HTTP route per port of ws, in port order,
// each under its connect path, rewritten to "/" only when RemovePathPrefix
// is set, with its header templates rendered (httpPathPrefix takes a port id
// of the same workspace).
func WorkspaceHTTPRoutes(ws Workspace, clusterDomain string) ([]*networkingv1.HTTPRoute, error) {
	prefixes := make(PathPrefixes, len(ws.Ports))
	for _, p := range ws.Ports {
		prefixes[p.ID] = WorkspaceConnectPath(ws.Namespace, ws.Name, p.ID)
	}
	out := make([]*networkingv1.HTTPRoute, 0, len(ws.Ports))
	var errs []error
	for _, p := range ws.Ports {
		r := Route{
			Name:       p.ID,
			PathPrefix: prefixes[p.ID],
			Service:    ws.Service,
			Namespace:  ws.Namespace,
			Port:       p.Port,
		}
		if p.HTTPProxy != nil {
			r.RewriteToRoot = p.HTTPProxy.RemovePathPrefix
			r.RequestHeaders = p.HTTPProxy.RequestHeaders
		}
		hr, err := HTTPRoute(r, clusterDomain, prefixes)
		if err != nil {
			errs = append(errs, fmt.Errorf("port %s: %w", p.ID, err))
			continue
		}
		out = append(out, hr)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
