// Package expose serves per-Profile web applications through the Istio
// ingress gateway, one networking.istio.io/v1 VirtualService per application
// in the Profile's namespace.
//
// Each configured app gets, on the configured gateways and hosts:
//
//   - a route matching the path prefix /<prefix>/<namespace>/ to
//     <service>.<namespace>.svc.<clusterDomain>:<port>;
//   - when rewriteToRoot is set, a rewrite of that prefix to "/", for
//     applications that serve relative URLs;
//   - when dashboardRedirect is set, a redirect from the central dashboard's
//     link form /<prefix>/?ns=<namespace> to /<prefix>/<namespace>/;
//   - request header operations (set, add, remove). Set and add values are Go
//     templates with one function, httpPathPrefix "<app name>", which yields
//     that app's path prefix in the Profile's namespace.
//
// Templates are parsed and executed when the config is decoded, for the
// host's defaults at start-up and for each Profile's spec, so a broken one is
// a clear error and never a half-rendered object: ExposeReady=False with
// reason InvalidSpec naming the app, the header and the template error, and
// the Profile's VirtualServices stay as they were. Templates only print
// values: if and with are allowed; range, define, block and template calls
// are not, and a rendered value is at most 8 KiB, so that a Profile's spec
// cannot keep a worker busy.
//
// The same route builder renders Kubeflow Notebooks 2.0 workspaces:
// [WorkspaceHTTPRoutes] gives one route per workspace port under
// /workspace/connect/<namespace>/<workspace>/<portId>/, rewritten to "/" only
// when the port's httpProxy.removePathPrefix is true, with the same header
// templates (httpPathPrefix takes a port id).
//
// The host may give every Profile apps in its defaults; a Profile that lists
// apps in its spec replaces that list. Gateways, hosts and the cluster domain
// are the host's. Their defaults come
// from the environment variables of the upstream controllers when set
// (ISTIO_GATEWAY, ISTIO_HOSTS or ISTIO_HOST, both comma-separated, and
// CLUSTER_DOMAIN; see [ConfigFromEnv]), else kubeflow/kubeflow-gateway, "*"
// and cluster.local. The host's config wins over the environment.
//
// Host configuration:
//
//	expose:
//	  defaults:
//	    gateways: [kubeflow/kubeflow-gateway]
//	    hosts: [kubeflow.example.org]
//	    clusterDomain: cluster.local
//
// A Profile that exposes RStudio under /rstudio/team-a/:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: expose
//	    spec:
//	      apps:
//	      - name: rstudio
//	        service: rstudio
//	        port: 8787
//	        rewriteToRoot: true
//	        dashboardRedirect: true
//	        requestHeaders:
//	          set:
//	            X-RStudio-Root-Path: '{{ httpPathPrefix "rstudio" }}'
//
// The VirtualServices carry owner references to the Profile and live in its
// namespace, so the plugin keeps no outside state and needs no finalizer.
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [DefinitionFromEnv], [Config] and [App] with the JSON names,
// defaults and meaning of their fields, [HeaderOperations], the environment
// variables ISTIO_GATEWAY, ISTIO_HOST(S) and CLUSTER_DOMAIN ([EnvGateway],
// [EnvHost], [EnvHosts], [EnvClusterDomain]), and the condition ExposeReady.
// Experimental, and free to change in a minor release: [Build], [Route],
// [HTTPRoute], [RenderHeaders], [ServiceHost], and the Notebooks 2.0 workspace
// routes ([Workspace], [WorkspacePort], [HTTPProxy], [WorkspaceHTTPRoutes],
// [WorkspaceConnectPath]), which follow a Kubeflow API that is itself still
// moving; [RenderHeaders]' [PathPrefixes] and [MaxHeaderValueBytes], [Plugin],
// [ConfigFromEnv], [ConfigFromProcessEnv], [NewConfig], [MeshGateway],
// [VirtualServiceKind] and the constants of the defaults ([DefaultGateway],
// [DefaultHost], [DefaultClusterDomain]); run the plugin through its
// [Definition], and use these for tests and previews.
package expose
