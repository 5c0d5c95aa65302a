// Package authpolicy gives every Profile's namespace Istio AuthorizationPolicies
// (security.istio.io/v1) that let its owner and contributors in, and no one
// else who merely claims to be them.
//
// The access policy (named profilekit-access by default) is an ALLOW policy
// with these rules:
//
//   - the user-id header (kubeflow-userid, or $USERID_HEADER) holds the
//     owner or a contributor, with the user-id prefix ($USERID_PREFIX)
//     before each name, and the request comes from one of the ingress
//     gateway principals. The header is set by the gateway's
//     authentication; requiring the gateway's identity in the same rule
//     means no other workload can forge it;
//   - the request comes from a workload of the same namespace;
//   - GET and HEAD on the configured probe paths, unauthenticated (none by
//     default);
//   - the notebook controller's principal, on its notebooks' paths, for its
//     status calls.
//
// Contributors are the user annotations of the RoleBindings in the Profile's
// namespace that the access-management service writes: annotations user and
// role, where role is one of the configured roles (edit and view by default).
// Values are sorted and unique. The plugin watches RoleBindings, metadata only
// and in a cache of their own, and maps each one with a user annotation to
// the Profile of its namespace, so that adding or removing a contributor
// updates the policy within seconds and a removed contributor's name leaves
// the header values. A binding that is being deleted no longer counts.
//
// Further ALLOW or DENY policies come from the configuration in Istio's rule
// shape; {{ .Namespace }} and {{ .Profile }} stand for the Profile's namespace
// and name in their string values.
//
// Upstream's ns-owner-access-istio is never written: no configured name may
// be it. Note that while that policy exists it lets the header in from any
// workload; a platform that wants the gateway check to hold must stop the
// upstream controller from writing it.
//
// Every field is the host's: a Profile cannot widen who reaches it.
//
// Host configuration:
//
//	authpolicy:
//	  enabled: all
//	  defaults:
//	    userIDHeader: kubeflow-userid
//	    userIDPrefix: ""
//	    gatewayPrincipals:
//	    - cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account
//	    probePaths: [/healthz]
//	    notebookController:
//	      principals: [cluster.local/ns/kubeflow/sa/notebook-controller-service-account]
//	      paths: ["/notebook/{{ .Namespace }}/*"]
//	    contributorRoles: [edit, view]
//	    policies:
//	    - name: deny-protected-b-transfers
//	      action: DENY
//	      selector: {data.example.ca/classification: protected-b}
//	      rules:
//	      - to:
//	        - operation:
//	            paths: ["/notebook/{{ .Namespace }}/*/files/*"]
//
// A Profile served by it; a contributor is added by the access-management
// service's RoleBinding in namespace team-a with annotations
// user: bob@example.org and role: edit:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: authpolicy
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config] and the types it holds ([Caller], [Policy], [Rule],
// [From], [To], [Source], [Operation], [Condition]) with the JSON names,
// defaults and meaning of their fields, the environment variables
// USERID_HEADER and USERID_PREFIX ([EnvUserIDHeader], [EnvUserIDPrefix]), the
// contributor annotations read from RoleBindings ([AnnotationUser],
// [AnnotationRole]), and the condition AuthpolicyReady. Experimental, and free
// to change in a minor release: [Build], [AccessSpec], [PolicySpec], [Users],
// [Contributors] and [HeaderKey], whose Go signatures follow Istio's API
// packages; [Plugin], [NewConfig] and the constants of the defaults
// ([DefaultName], [DefaultUserIDHeader], [DefaultGatewayPrincipal],
// [DefaultNotebookPrincipal]); run the plugin through its [Definition], and
// use these for tests and previews.
package authpolicy
