// Package authpolicy gives every Profile's namespace Istio AuthorizationPolicies
// (security.istio.io/v1) that let its owner and contributors in, and no one
// else who merely claims to be them.
//
// The access policy (named profilekit-access by default) is an ALLOW policy
// with these rules:
//
//   - the user-id header (kubeflow-userid, or $USERID_HEADER) holds the
//     owner, when a User, or a user contributor, with the user-id prefix
//     ($USERID_PREFIX) before each name, and the request comes from one of
//     the ingress gateway principals. The header is set by the gateway's
//     authentication; requiring the gateway's identity in the same rule
//     means no other workload can forge it;
//   - the groups header or claim (see Groups) names the owner, when a
//     Group, or a group contributor, on a request from the same principals;
//   - the request comes from a workload of the same namespace;
//   - GET and HEAD on the configured probe paths, unauthenticated (none by
//     default);
//   - the notebook controller's principal, on its notebooks' paths, for its
//     status calls.
//
// Contributors are the user annotations of the RoleBindings in the Profile's
// namespace that the access-management service writes: annotations user and
// role, where role is one of the configured roles (edit and view by default).
// Values are sorted and unique. The service names each binding after its
// subject's kind, name and role (group-ml-team-clusterrole-edit for Group
// ml-team with role edit), and only that name tells the kind, since the
// plugin reads no binding's subjects: a binding so named for a Group makes a
// group contributor, one so named for a ServiceAccount makes none (a
// service account calls with its own identity, and RBAC alone says what it
// may do; so does a ServiceAccount owner), and every other binding a user
// contributor. The plugin watches RoleBindings, metadata only
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
//	    groups:                          # none by default
//	      header: kubeflow-groups
//	      separator: ","
//	      claim: ""
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
// service's RoleBinding user-bob-example-org-clusterrole-edit in namespace
// team-a with annotations user: bob@example.org and role: edit:
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
// # Groups
//
// The host says where the mesh finds a request's groups:
//
//   - header: the request header that carries the user's groups, joined by
//     separator (default ","). With oauth2-proxy, Kubeflow's manifests fill
//     kubeflow-groups from the token's groups claim (the gateway's
//     RequestAuthentication, outputClaimToHeaders), so the host sets
//     groups: {header: kubeflow-groups}. As with the user-id header, the
//     gateway must remove every copy of the header that a client sends
//     before authentication sets it: the policy trusts the header on each
//     request from gatewayPrincipals;
//   - claim: the JWT claim that lists the groups (groups: {claim: groups}),
//     matched by the workloads' sidecars, so it needs a
//     RequestAuthentication that applies to the Profiles' workloads, and a
//     gateway that forwards the token.
//
// For the claim, a RequestAuthentication in the mesh's root namespace
// applies to every workload, the gateway included:
//
//	apiVersion: security.istio.io/v1
//	kind: RequestAuthentication
//	metadata: {name: kubeflow-jwt, namespace: istio-system}
//	spec:
//	  jwtRules:
//	  - issuer: https://dex.example.org
//	    forwardOriginalToken: true
//
// Istio matches a header's value exactly, by prefix or by suffix only, so a
// group is recognised in the header when it is the whole header, the first
// group or the last: a member whose header lists the group between two
// others is not admitted by the header. The claim has no such limit: Istio
// matches each of its elements.
//
// A name that Istio cannot match exactly is left out of the access policy:
// a group that is empty, holds the separator or a "*", or has white space at
// either end; a user whose header value (with the prefix) starts or ends
// with "*"; every group while the host configures neither header nor claim.
// The Profile reports AuthpolicyReady=False with InvalidSpec naming each,
// and the policy of the rest is applied all the same; when no rule remains,
// the access policy is written without rules, which admits no one.
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
// [Contributors], [Members] and [HeaderKey], whose Go signatures follow
// Istio's API packages; [Plugin], [NewConfig] and the constants of the defaults
// ([DefaultName], [DefaultUserIDHeader], [DefaultGatewayPrincipal],
// [DefaultNotebookPrincipal]); run the plugin through its [Definition], and
// use these for tests and previews.
package authpolicy
