// Package rbac gives every Profile RoleBindings, and optionally namespaced
// Roles, in its namespace.
//
// The host configures bindings every Profile gets (a support group bound to a
// ClusterRole, the pipelines service account bound to an edit role) and Roles
// for rules no ClusterRole holds. Each binding or Role may carry a
// profileSelector over the Profile's labels, so that only some Profiles get
// it. A Profile may add bindings of its own in its spec.plugins entry, but
// only to roles the host lists in allowedRoles: the plugin writes with its
// own rights, which a Profile must not borrow to grant any role it likes.
//
// Subject names and namespaces may hold two placeholders, checked when the
// configuration is loaded and filled in for each Profile:
//
//	{{ .Namespace }}  the Profile's namespace
//	{{ .Owner }}      the name in the Profile's spec.owner
//
// A ServiceAccount subject without a namespace is in {{ .Namespace }}. Subjects are
// sorted by kind, namespace and name, and duplicates dropped, so the same input
// always gives the same binding.
//
// Kubernetes never lets a binding change its roleRef. When the role of one of
// our bindings changes, the plugin deletes that binding and writes it again
// (it gets a new UID); the bindings' subjects and the Roles' rules are
// updated in place with server-side apply.
//
// Only bindings and Roles carrying profilekit's labels for this plugin and
// Profile are written or deleted. The upstream controller's namespaceAdmin,
// default-editor and default-viewer, the contributor bindings (those with the
// user and role annotations) and any other binding we did not write are never
// touched; a binding of ours whose name another object already holds is
// reported as a Conflict and left alone.
//
// Host configuration:
//
//	rbac:
//	  enabled: all
//	  defaults:
//	    bindings:
//	    - name: support-view
//	      roleRef: {kind: ClusterRole, name: view}
//	      subjects:
//	      - {kind: Group, name: platform-support@example.org}
//	    - name: pipeline-runner-edit
//	      roleRef: {kind: ClusterRole, name: kubeflow-edit}
//	      subjects:
//	      - {kind: ServiceAccount, name: default-editor}
//	      profileSelector:
//	        matchLabels: {pipelines.example.org/enabled: "true"}
//	    roles:
//	    - name: pod-log-reader
//	      rules:
//	      - {apiGroups: [""], resources: [pods/log], verbs: [get, list]}
//	    allowedRoles:
//	    - {kind: ClusterRole, name: kubeflow-view}
//	    - {kind: Role, name: pod-log-reader}
//
// A Profile that lets its owner's team read pod logs:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	  labels:
//	    pipelines.example.org/enabled: "true"
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: rbac
//	    spec:
//	      extraBindings:
//	      - name: team-a-logs
//	        roleRef: {kind: Role, name: pod-log-reader}
//	        subjects:
//	        - {kind: Group, name: team-a@example.org}
//	        - {kind: User, name: "{{ .Owner }}"}
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config] and the types it holds ([Binding], [RoleRef],
// [Subject], [Role]) with the JSON names and meaning of their fields, the
// placeholders they take, and the condition RbacReady. Experimental, and free
// to change in a minor release: [Build], [BuildRole], [BuildBinding],
// [Subjects] and [Objects], [NewConfig] and [Plugin]; run the plugin through
// its [Definition], and use these for tests and previews.
package rbac
