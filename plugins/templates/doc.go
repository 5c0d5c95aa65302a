// Package templates writes objects of any namespaced kind into Profiles'
// namespaces from templates in the host's configuration: a ServiceMonitor,
// a Role, a ConfigMap of settings, or a custom resource for every Profile,
// or for some.
//
// Each template has a name, an optional profileSelector over the Profile's
// labels (only Profiles it matches get the object), optIn (only Profiles
// that also name the template in their spec's enable list get it) and the
// object, written as a YAML mapping or as a string holding one YAML
// document. The object's metadata holds name, labels and annotations only:
// a metadata.namespace is refused when the configuration loads, because
// every object goes into the namespace of the Profile it is for. String
// values (not keys, and not apiVersion or kind) may use placeholders,
// checked when the configuration loads and filled in for each Profile:
//
//	{{ .Namespace }}          the Profile's namespace
//	{{ .Profile }}            the Profile's name
//	{{ .Owner }}              the name in the Profile's spec.owner
//	{{ .OwnerKind }}          the kind in the Profile's spec.owner (User, Group)
//	{{ .Label "example.org/team" }}  the value of one of the Profile's labels
//
// Other braces, such as a PrometheusRule's {{ $labels.pod }}, are written
// as they are; a {{ .Word }} that is not a placeholder above is refused as
// a typo.
//
// Objects are written as every plugin's are: server-side apply under the
// field manager profilekit-templates, profilekit's labels, an owner
// reference to the Profile, nothing sent when the object already holds
// what the template says, drift put back through a watch on the kind. An
// object the Profile no longer gets (the template removed, the Profile's
// labels no longer selected, its opt-in dropped) is deleted; revoking the
// plugin deletes them all. An object of a wanted name that is not ours is
// left untouched and reported (Conflict).
//
// The host watches and prunes the kinds its templates name (see
// Definition: Config.Kinds, through plugins.Definition.OwnsFrom), and only
// those: when the last template of a kind is removed, list the kind in
// retiredKinds, or its objects stay until their Profiles are deleted. A
// kind the cluster does not serve when the host starts is not watched until
// the host starts again.
//
// A template that fails for a Profile sets TemplatesReady False with the
// reason and a line naming the template and the object, and leaves the
// object it made before as it is: neither written nor pruned. It fails when
//
//   - the cluster does not serve its kind, or serves it cluster-scoped
//     (InvalidConfig);
//   - its kind is on the deny list deniedKinds (default Namespace,
//     ResourceQuota and LimitRange, which the core, quotas and limitrange
//     plugins own), it is a RoleBinding or ClusterRoleBinding that grants
//     a role in deniedRoles (default cluster-admin and admin), a ConfigMap
//     named like profilekit's records (profilekit-...), or it sets a label
//     or annotation key of profilekit's (InvalidConfig);
//   - it does not render into a valid object for the Profile: a name that
//     is not valid for the kind, a label value that is not valid, or an
//     object the API server refuses as invalid (InvalidConfig); a label it
//     reads that the Profile does not carry (InvalidLabel) or an owner it
//     reads that the Profile does not have (InvalidSpec). A value of a type
//     the kind's schema does not take the API server refuses as an
//     internal error, which is retried with backoff (ApplyFailed);
//   - another template already makes an object of its kind and name for
//     the Profile (InvalidConfig).
//
// When a failing template's object has no name for the Profile (its name
// reads a missing label, say), which object it made before cannot be told,
// and nothing of the Profile's is pruned until it renders again. What can be
// refused without a Profile or a cluster (YAML that does not parse, a
// missing apiVersion, kind or name, a metadata.namespace, an unknown
// placeholder, a well-known cluster-scoped kind, a denied kind or role) is
// refused when the configuration loads. A Profile whose enable names a
// template the host does not have, or one its labels are not selected for,
// is refused (InvalidSpec): validate and the admission webhook deny it.
//
// Host configuration, a ServiceMonitor for every Profile and a Role for
// the Profiles of the platform team's choosing:
//
//	templates:
//	  enabled: all
//	  defaults:
//	    templates:
//	    - name: metrics
//	      object:
//	        apiVersion: monitoring.coreos.com/v1
//	        kind: ServiceMonitor
//	        metadata:
//	          name: profile-metrics
//	          labels: {example.org/team: '{{ .Label "example.org/team" }}'}
//	        spec:
//	          selector: {matchLabels: {metrics.example.org/scrape: "true"}}
//	          namespaceSelector: {matchNames: ['{{ .Namespace }}']}
//	          endpoints: [{port: metrics, interval: 30s}]
//	      profileSelector:
//	        matchExpressions: [{key: example.org/team, operator: Exists}]
//	    - name: log-reader
//	      optIn: true
//	      object: |
//	        apiVersion: rbac.authorization.k8s.io/v1
//	        kind: Role
//	        metadata:
//	          name: pod-log-reader
//	        rules:
//	        - {apiGroups: [""], resources: [pods, pods/log], verbs: [get, list, watch]}
//
// A Profile that opts into the Role:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	  labels:
//	    example.org/team: data-science
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: templates
//	    spec:
//	      enable: [log-reader]
//
// The host's own RBAC must let it write each templated kind, and bind the
// roles its templated RoleBindings grant (or hold their rights).
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config], [Template] and [KindRef] with the JSON names and
// meaning of their fields, the placeholders they take, [DefaultDeniedKinds],
// [DefaultDeniedRoles], and the condition TemplatesReady. Experimental, and
// free to change in a minor release: [Build] with [Plan], [Rendered] and
// [Held]; [Object]; [NewConfig] and [Plugin]; run the plugin through its
// [Definition], and use these for tests and previews.
package templates
