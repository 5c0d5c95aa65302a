// Package contributors lets a Profile declare its contributors: the people,
// groups and service accounts that may work in its namespace, with the
// role admin, edit or view. Each one gets what the access-management
// service (KFAM) makes when a contributor is added in the dashboard, so
// the dashboard lists the Profile's users as it lists any contributor.
//
// # What each entry gets
//
// In the Profile's namespace, a RoleBinding named as KFAM names it
// ([BindingName]: user-alice-example-org-clusterrole-edit for the user
// alice@example.org with role edit), with exactly one subject and the
// roleRef ClusterRole kubeflow-admin, kubeflow-edit or kubeflow-view
// ([ClusterRole]). Beside it, an AuthorizationPolicy of the same name:
//
//   - User: KFAM's one rule, the user-id header equal to the prefix and the
//     user's name, on requests from the ingress gateway or the pipelines
//     UI.
//   - Group: the rules of the host's groups setting (a groups header, a JWT
//     claim, or both) admit the group's members from the same callers.
//     When the host configures neither, the entry gets its RoleBinding
//     alone and the condition says so.
//   - ServiceAccount: the RoleBinding alone. A workload reaches the mesh
//     with its own identity, not with the user-id header; the
//     ServiceAccount's namespace is the Profile's unless the entry names
//     one.
//
// Every entry's objects carry KFAM's annotations user: <name> and
// role: <role>. KFAM lists contributors by them and takes the kind from the
// binding's subject, so the dashboard lists groups and service accounts
// beside users. The authpolicy plugin tells a group's or a service
// account's binding by KFAM's name for it and never reads its user
// annotation as a user-id header value, so a user named like a group is
// not let in.
//
// Every object carries profilekit's labels and an owner reference to the
// Profile, and is written with server-side apply under the field manager
// profilekit-contributors. Removing an entry deletes its two objects;
// changing its role deletes the old pair and writes a pair of the new
// name; removing the plugin deletes all of them.
//
// # What the host allows
//
// A Profile's entries are checked one by one against the host's limits:
// the subject kinds (User and Group by default; ServiceAccount is opt-in),
// the roles (edit and view by default; admin, which lets a contributor
// change the namespace's RBAC, is opt-in), how many entries
// (maxContributors, 50 by default: entries from that index on are
// refused), and, when set, the user domains (userDomains). A name the mesh
// could not match exactly is refused too: a user or group name with a
// leading or trailing "*", a group name holding the groups header's
// separator. Two entries for different subjects whose binding names meet
// (alice.b and alice-b) are both refused; an entry repeated is granted
// once. A refused entry gets nothing, and an object of ours it had is
// deleted, so that the host's limits hold from the next pass on; the other
// entries still apply. Each refused entry is one line of the condition
// ContributorsReady (False, InvalidSpec), naming its index, kind, name and
// why.
//
// # Bindings made by hand or by KFAM
//
// Only objects with profilekit's labels for this plugin and Profile are
// written or deleted. A contributor added in the dashboard before the
// Profile declared the same person and role already holds the wanted name:
// that binding and its policy are left exactly as they are (they grant the
// same), and the condition is False with reason Conflict, naming the entry
// and the objects, and saying what to do: delete them to let the Profile
// manage the contributor (profilekit writes its own within seconds, since
// the host watches contributor bindings and policies), or remove the
// entry. The condition names only what the API server still holds when
// the pass ends: KFAM deletes a binding and then its policy, and a pass
// that met the policy just before it went is retried, not left in
// Conflict, so the contributor never keeps a binding without its mesh
// access. Bindings of
// other names, the owner's namespaceAdmin and anything else made by hand
// are never touched and keep working.
//
// When KFAM (the dashboard's "remove contributor") deletes a binding or
// policy of a contributor the Profile declares, the Profile wins: the host
// watches its objects and writes them again within seconds. KFAM's request
// succeeds, and the contributor is back on the dashboard's next refresh.
// The host records no Event for it, since the pass succeeds: the condition
// stays True, the re-creation counts in the metric
// profilekit_plugin_objects_total{plugin="contributors",action="created"},
// and the host logs it ("applied", action created) at verbosity 1. To
// remove a contributor for good, remove the entry from the Profile. A hand
// edit of one of our objects (another subject added, the policy's rule
// widened) is put back the same way.
//
// # Configuration
//
// Host configuration (every field but contributors is the host's):
//
//	contributors:
//	  enabled: listed
//	  defaults:
//	    userIDHeader: kubeflow-userid      # default, or USERID_HEADER
//	    userIDPrefix: ""                   # default, or USERID_PREFIX
//	    principals:                        # defaults upstream's, or the env
//	      ingressGateway: cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account
//	      pipelinesUI: cluster.local/ns/kubeflow/sa/ml-pipeline-ui
//	    groups: {header: kubeflow-groups}  # or claim: groups; none by default
//	    roles: [edit, view]
//	    kinds: [User, Group]
//	    maxContributors: 50
//	    userDomains: ["*@example.org"]
//
// The host's ServiceAccount writes RoleBindings to kubeflow-admin,
// kubeflow-edit and kubeflow-view, which Kubernetes allows only to a
// caller that holds every permission of those ClusterRoles or may bind
// them (the verb bind on clusterroles of those names).
//
// A Profile:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: contributors
//	    spec:
//	      contributors:
//	      - {kind: User, name: bob@example.org, role: edit}
//	      - {kind: Group, name: team-a-readers, role: view}
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config] and the types it holds ([Contributor],
// [Principals]) with the JSON names and meaning of their fields, the roles
// ([RoleAdmin], [RoleEdit], [RoleView]), [DefaultMaxContributors], the
// names and shapes of the objects written ([BindingName], [ClusterRole]),
// and the condition ContributorsReady. Experimental, and free to change in
// a minor release: [Build], [Objects] with [Objects.List], [NewConfig],
// [ConfigFromEnv], [Principals.List] and [Plugin]; run the plugin through
// its [Definition], and use these for tests and previews.
package contributors
