// Package core makes, for every Profile, what the upstream Kubeflow profile
// controller makes, with the same names, so that a host running it replaces
// that controller and Kubeflow's dashboard, access management (KFAM),
// notebooks and pipelines work unchanged:
//
//   - the namespace named after the Profile, owned by it, with the owner
//     annotation (spec.owner.name), istio-injection: enabled when the mesh
//     mode is sidecar, and the labels of the namespace labels file;
//   - RoleBinding namespaceAdmin to ClusterRole kubeflow-admin for
//     spec.owner, annotated user: <owner> and role: admin for KFAM;
//   - ServiceAccounts default-editor and default-viewer, with RoleBindings of
//     the same names to kubeflow-edit and kubeflow-view; only their names
//     (and our labels) are ours, so annotations that identity plugins put on
//     them stay theirs;
//   - AuthorizationPolicy ns-owner-access-istio: the owner through the
//     ingress gateway and the pipelines UI (a User by the user-id header, a
//     Group by the groups header or claim, see Groups below), the
//     namespace's own workloads, the probe paths /healthz, /metrics and
//     /wait-for-drain, and the notebook controller's GET of */api/kernels.
//     A ServiceAccount owner gets no header rule: it calls with its own
//     identity, and RBAC alone says what it may do;
//   - ResourceQuota kf-resource-quota from spec.resourceQuotaSpec, removed
//     when its hard list is empty.
//
// Every object is written with server-side apply under the field manager
// profilekit-core, labelled as ours and owned by the Profile, like any
// plugin's; the Profile itself is never written, only its CoreReady
// condition.
//
// Deleting a Profile deletes its namespace (through the owner reference, as
// upstream does) and with it every workload, volume claim and object the
// users made there. The storage plugins' retention settings keep data
// outside the namespace; nothing keeps what is inside. Revoking the plugin
// from a Profile (the host no longer enables it) leaves everything in place
// unless the host's retention for core is Delete.
//
// The namespace labels file has the upstream format and meaning: a YAML map
// where `key: value` adds the label to a namespace that does not have the
// key (an existing value, whoever set it, is never changed) and `key: ""`
// removes the key. A key dropped from the file stays where it was set. The
// file is watched; a change re-reconciles every Profile. A missing or
// malformed file is reported as CoreReady=False (InvalidConfig) and nothing
// is written until it is fixed.
//
// A namespace that exists and is not ours is never written: one whose owner
// annotation names someone else (or that has none) is reported as
// CoreReady=False with Conflict and the owner it names. One that the upstream
// controller made for the same owner, and the objects it made inside, are
// taken over in place when the host sets adopt: the same objects (same UIDs)
// get our labels and fields; nothing is deleted or recreated, so the owner
// never loses access.
//
// Host configuration (every field is the host's; the environment variables
// the upstream controller reads are the defaults underneath):
//
//	core:
//	  enabled: all
//	  defaults:
//	    namespaceLabelsPath: /etc/profile-controller/namespace-labels.yaml
//	    userIdHeader: kubeflow-userid          # USERID_HEADER
//	    userIdPrefix: ""                       # USERID_PREFIX
//	    mesh: sidecar                          # or none
//	    principals:
//	      ingressGateway: cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account
//	      pipelinesUI: cluster.local/ns/kubeflow/sa/ml-pipeline-ui
//	      notebookController: cluster.local/ns/kubeflow/sa/notebook-controller-service-account
//	    ownerFromGatewayOnly: false
//	    groups:                                # none by default
//	      header: kubeflow-groups
//	      separator: ","
//	      claim: ""
//	    adopt: false
//	    handOverFinalizer: false
//
// With handOverFinalizer, the host takes the upstream controller's
// profile-finalizer off each Profile once it serves it (CoreReady and Ready
// True), so that Profiles moved from that controller finish deleting
// without it. A Profile that lists an upstream plugin kind
// (WorkloadIdentity, AwsIamForServiceAccount) loses it only once a plugin
// of this host serves that kind and holds its own finalizer on the
// Profile; one that lists a kind no plugin of the host serves keeps it, for
// the upstream controller's cleanup. A finalizer another controller puts
// back after the hand-over (the upstream controller still running) is left
// in place for a back-off (reconcilers.HandOverBackoff, doubling up to
// reconcilers.MaxHandOverBackoff) and reported once on the Profile
// (FinalizerHandOver, and an Event naming the other field manager); the
// host hands it over again by itself once the other controller is gone.
//
// A Profile needs nothing more than upstream's fields:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  resourceQuotaSpec:
//	    hard: {cpu: "8", memory: 32Gi}
//
// # Groups
//
// A Profile may be owned by a group:
//
//	spec:
//	  owner: {kind: Group, apiGroup: rbac.authorization.k8s.io, name: ml-team}
//
// namespaceAdmin then binds kubeflow-admin to the group, so that RBAC lets
// every member in, and the AuthorizationPolicy admits a request from the
// ingress gateway (or the pipelines UI, unless ownerFromGatewayOnly) whose
// groups name ml-team. The host says where the mesh finds them:
//
//   - header: the request header that carries the user's groups, joined by
//     separator (default ","). With oauth2-proxy, Kubeflow's manifests fill
//     kubeflow-groups from the token's groups claim (the gateway's
//     RequestAuthentication, outputClaimToHeaders), so the host sets
//     groups: {header: kubeflow-groups}. As with the user-id header, the
//     gateway must remove every copy of the header that a client sends
//     before authentication sets it: the policy trusts the header on each
//     request from the gateway's principal;
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
// group or the last ("ml-team", "ml-team,*", "*,ml-team"): a member whose
// header lists ml-team between two other groups is not admitted by the
// header. The claim has no such limit: Istio matches each of its elements.
//
// An owner that the policy cannot match exactly gets no rule in it: a Group
// whose name is empty, holds the separator or a "*", or has white space at
// either end; a User whose header value (with the prefix) starts or ends
// with "*"; a Group while the host configures neither header nor claim. The
// Profile then reports CoreReady=False with InvalidSpec naming the owner,
// while the namespace, the RoleBindings and the rest of the policy are
// applied all the same; nothing admits more than the owner would be.
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config] and [Principals] with the JSON names, defaults and
// meaning of their fields, the environment variables it reads
// ([EnvUserIDHeader], [EnvUserIDPrefix], [EnvIngressPrincipal],
// [EnvNotebookPrincipal], [EnvPipelinesUIPrincipal]), the upstream names of
// what it writes ([OwnerRoleBinding], [EditorAccount], [ViewerAccount],
// [AuthorizationPolicy], [ResourceQuota], [ClusterRoleAdmin],
// [ClusterRoleEdit], [ClusterRoleView], [AnnotationOwner], [AnnotationUser],
// [AnnotationRole], [RoleAdmin], [LabelIstioInjection]; they are upstream's
// contract, not ours to change), the namespace labels file's format, and the
// condition CoreReady. Experimental, and free to change in a minor release:
// [Config.HandedOverFinalizer] with [UpstreamFinalizer] and
// [UpstreamPluginKinds]; [OwnerSubject];
// [Build] and the builders of single objects ([Namespace], [OwnerBinding],
// [ServiceAccount], [AccountBinding], [Policy], [AccessSpec], [Quota]),
// [ParseLabels], [ReadLabelsFile], [DefaultLabels] and [NamespaceLabels],
// [Plugin], [ConfigFromEnv], [NewConfig], [KernelsPath], [ProbePaths], the
// mesh modes' constants [MeshSidecar] and [MeshNone], and the constants of the
// defaults ([DefaultUserIDHeader], [DefaultIngressPrincipal],
// [DefaultNotebookPrincipal], [DefaultPipelinesUIPrincipal]); run the plugin
// through its [Definition], and use these for tests and previews.
package core
