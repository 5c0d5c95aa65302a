// Package egress routes a Profile's traffic to chosen external hosts through
// an Istio egress gateway, so that it leaves the mesh at one audited place.
//
// The client keeps its own TLS session end to end; the routing works on the
// SNI of that session. For a Profile whose gate is on, the plugin writes, in
// the Profile's namespace:
//
//   - a ServiceEntry (MESH_EXTERNAL, DNS resolution) for the hosts with one
//     TLS port per distinct host port, exported to the Profile's namespace
//     and the egress gateway's, which both have to know the hosts;
//   - a DestinationRule for the egress gateway's Service with one subset, the
//     target of the Profile's sidecars, exported to the Profile's namespace;
//   - a VirtualService <name>-mesh bound to the mesh gateway: TLS for each
//     host and port, matched by SNI, goes to the egress gateway's port;
//     exported to the Profile's namespace only, so other Profiles' traffic
//     is not touched;
//   - a VirtualService <name>-gateway bound to the egress Gateway: the same
//     SNI on the gateway's port goes on to the host's own port; exported to
//     the gateway's namespace only, where the gateway reads it.
//
// # Where the objects live
//
// Istio lets an object in one namespace serve another through exportTo, and
// lets a VirtualService bind to a Gateway in another namespace by its
// <namespace>/<name>. So every object stays in the Profile's namespace even
// though the gateway reads two of them. That keeps all of the plugin's state
// inside the namespace: the objects carry owner references to the Profile,
// are garbage-collected with it, and the plugin needs no finalizer
// (Definition.OutsideState is false). Writing the gateway half into the
// gateway's namespace would have needed a finalizer, write access to that
// namespace, and cleanup when a Profile disappears without us.
//
// The Gateway itself is the platform's: one shared object with a TLS
// PASSTHROUGH server on GatewayPort for the hosts (or "*"). The plugin only
// refers to it, so no Profile can change what the gateway listens for. When
// two Profiles route the same host, the gateway merges their identical
// gateway routes.
//
// # The gate
//
// Routing is on when the Profile's gate label (gateLabel, default
// egress.profilekit.dev/enabled) is "true", or, without that label, when the
// Profile's spec sets enabled: true. "false" turns it off. Any other value is
// off too, and is reported as EgressReady=False with reason InvalidLabel,
// naming the label and the value. When routing turns off, the objects are
// deleted.
//
// Hosts are exact DNS names (the ServiceEntry resolves them by DNS, which
// rules out wildcards), each once, each with a port (default 443). Under an
// outbound traffic policy of REGISTRY_ONLY, a ServiceEntry is also what lets
// the Profile reach a host at all, so hosts that want to limit what Profiles
// may pick set allowedHosts (exact names or *.<domain>); a host outside it is
// an InvalidSpec error and changes nothing.
//
// Host configuration (all values are examples; the defaults are Istio's own
// egress gateway install):
//
//	egress:
//	  enabled: all
//	  defaults:
//	    name: profilekit-egress
//	    gateLabel: egress.example.org/enabled
//	    gateway: istio-system/istio-egressgateway
//	    gatewayService: istio-egressgateway.istio-system.svc.cluster.local
//	    gatewayPort: 443
//	    allowedHosts: ["*.blob.core.windows.net", "pypi.example.org"]
//
// A Profile that sends its storage and package traffic through the gateway:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	  labels:
//	    egress.example.org/enabled: "true"
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: egress
//	    spec:
//	      hosts:
//	      - host: teamadata.blob.core.windows.net
//	      - host: pypi.example.org
//	        port: 8443
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config] and [ExternalHost] with the JSON names, defaults and
// meaning of their fields, the gate label, and the condition EgressReady.
// Experimental, and free to change in a minor release: [Build], [Gate] and
// [Objects], [Plugin], [NewConfig], the kinds it writes ([ServiceEntryKind],
// [DestinationRuleKind], [VirtualServiceKind]), [MeshGateway] and the
// constants of the defaults ([DefaultName], [DefaultPort], [DefaultGateway],
// [DefaultGatewayPort], [DefaultGatewayService], [DefaultGateLabel]); run the
// plugin through its [Definition], and use these for tests and previews.
package egress
