// Package namespacemeta puts a Profile's own labels and annotations on its
// namespace, within what the host allows: an Istio revision, a Pod Security
// level, a node selector, a cost centre.
//
// The namespace is the core plugin's or the upstream controller's; this
// plugin never creates, updates or deletes it, and owns only the keys it
// sets, each through server-side apply under its field manager
// (profilekit-namespacemeta), as cloud identity plugins own their
// annotation on a service account. It applies exactly the Profile's keys:
// a key the Profile drops is removed by the API server, because it leaves
// the plugin's applied configuration. Only keys that this plugin alone set
// are removed that way; a key that another writer also applied stays, and
// so does every key the plugin never set (the core plugin's labels, a
// label set by hand). When the Profile stops listing the plugin, every key
// of the plugin goes and the others stay. A deleted Profile's namespace
// goes with it.
//
// The plugin's value wins: it applies with force, so a key another writer
// changed is taken back with the Profile's value, and a hand edit of one of
// its keys is put back within seconds (the host watches the metadata of
// namespaces, a watch it shares with the core plugin). To hand a key to
// someone else, drop it from the Profile first. A pass with nothing to
// change writes nothing; it reads the namespace from the host's caches
// when the core plugin made it, and from the API server when the upstream
// controller did (the caches keep no record of which keys are the
// plugin's on such a namespace).
//
// # What a Profile may set
//
// A key is refused, whatever the host allows, when it is
//   - under the kubernetes.io or k8s.io prefix exactly
//     (kubernetes.io/metadata.name); their subdomains
//     (pod-security.kubernetes.io/enforce) may be allowed;
//   - profilekit's: under profilekit.dev or one of its subdomains, or an
//     ownership label (app.kubernetes.io/managed-by);
//   - the owner annotation that Kubeflow reads, or the core plugin's
//     istio-injection label;
//   - a key of the core plugin's namespace labels file
//     (namespaceLabelsPath: give the plugin the same path as core), read
//     on every pass.
//
// Any other key must be in the host's allowlist (allow.labels,
// allow.annotations), as itself or under a <prefix>/* rule (example.org/*
// covers example.org/cost-centre, not team.example.org/x); a key listed
// itself follows its own rule, not its prefix's. A rule's values pattern
// (RE2) must match the whole value. Keys and label values must be valid for
// the API server. Listing a key that is always refused (the file's keys
// aside, which the host's configuration does not show) is an InvalidConfig
// error of the host's configuration.
//
// One refused key refuses the whole pass: NamespacemetaReady=False with
// reason InvalidSpec names every refused key and why, and nothing is
// written, so the namespace keeps every key it had, the plugin's included,
// until the Profile is fixed. A namespace of the Profile's name whose owner
// annotation does not name the Profile's owner, and that the core plugin
// did not make for the Profile, is a Conflict and is left untouched. While
// the namespace does not exist yet, the condition says so and the plugin
// tries again.
//
// Host configuration:
//
//	namespacemeta:
//	  enabled: listed
//	  defaults:
//	    namespaceLabelsPath: /etc/profilekit/namespace-labels.yaml
//	    allow:
//	      labels:
//	      - key: istio.io/rev
//	      - key: pod-security.kubernetes.io/enforce
//	        values: ^(baseline|restricted)$
//	      - key: example.org/*
//	      annotations:
//	      - key: scheduler.alpha.kubernetes.io/node-selector
//
// A Profile on a canary Istio revision, under the restricted Pod Security
// level, on its own nodes, with its cost centre:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: namespacemeta
//	    spec:
//	      labels:
//	        istio.io/rev: canary
//	        pod-security.kubernetes.io/enforce: restricted
//	        example.org/cost-centre: cc-1234
//	      annotations:
//	        scheduler.alpha.kubernetes.io/node-selector: pool=team-a
//
// Istio reads istio-injection before istio.io/rev: with the core plugin's
// mesh: sidecar, the namespace carries istio-injection: enabled, and a
// revision label has no effect until the host turns that off.
//
// The host needs get, list, watch and patch on namespaces.
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config] and [NewConfig] with [Allow] and [Rule], with the
// JSON names, defaults and meaning of their fields (the host's defaults and a
// Profile's spec), the keys always refused, the field manager
// profilekit-namespacemeta, and the condition NamespacemetaReady.
// Experimental, and free to change in a minor release: [Build], [Plugin] and
// [Object]; run the plugin through its [Definition], and use these for tests
// and previews.
package namespacemeta
