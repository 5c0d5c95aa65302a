// Package replicate copies Secrets and ConfigMaps that the host lists, such
// as a registry pull secret, artifact-store credentials or a CA bundle, into
// every Profile's namespace, and keeps the copies in step with their sources.
//
// Only the host names sources: one object by namespace and name, or the
// objects a label selector picks in a namespace. Each source gives every
// Profile the plugin serves a copy, narrowed by a profileSelector on the
// Profile's labels; an optIn source goes only to Profiles that include it by
// id in their spec. A Profile can never name a source the host does not list.
// Keys can be filtered and renamed; a Secret's type is kept.
//
// The host watches the sources only: one cache per source, in its namespace,
// by name (a field selector) or by its label selector, never Secrets or
// ConfigMaps cluster-wide. A change to a source reconciles only the Profiles
// that get it, and their copies follow within seconds.
//
// Copies are written with server-side apply under the field manager
// profilekit-replicate, carry profilekit's labels, an owner reference to the
// Profile and two annotations naming the source (replicate.profilekit.dev/
// source and /from); a copy edited by hand is put back. An object of the
// copy's name that profilekit does not manage is never overwritten: the
// condition reports it as a Conflict. A source that disappears leaves its
// copies in place (workloads may still use them) and ReplicateReady=False
// with reason SourceNotFound names it, unless the source's (or the config's)
// onSourceDeleted is Delete. Copies of sources a Profile no longer gets are
// deleted.
//
// Values never leave the API server's hands through profilekit: conditions,
// Events and logs name sources, keys and objects only, and profilekit render
// prints a Secret's keys and sizes, not its values.
//
// Host configuration: an image pull secret for every Profile, a CA bundle
// under another key name, and team credentials for Profiles that ask:
//
//	replicate:
//	  enabled: all
//	  defaults:
//	    onSourceDeleted: Retain
//	    sources:
//	    - id: registry-pull
//	      kind: Secret
//	      namespace: platform-secrets
//	      name: registry-pull
//	    - id: ca-bundle
//	      kind: ConfigMap
//	      namespace: platform-config
//	      name: corporate-ca
//	      copyName: ca-bundle
//	      keys: [{key: ca.crt, as: ca-bundle.crt}]
//	    - id: artifact-store
//	      kind: Secret
//	      namespace: platform-secrets
//	      selector: {matchLabels: {replicate.example.org/artifact-store: "true"}}
//	      copyPrefix: artifacts-
//	      optIn: true
//
// A Profile that also wants the artifact-store credentials:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: replicate
//	    spec:
//	      include: [artifact-store]
//
// Service accounts' imagePullSecrets are left to the core plugin or the
// upstream controller, which own default-editor.
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config], [Source], [Key] and [OnSourceDeleted]
// ([SourceDeletedDelete], [SourceDeletedRetain]) with the JSON names, defaults
// and meaning of their fields, the annotations [AnnotationSource] and
// [AnnotationFrom] on copies, [ReasonSourceNotFound], and the condition
// ReplicateReady. Experimental, and free to change in a minor release:
// [Build], [Found], [Copy] and [Scopes], [NewConfig], [Plugin], and the source
// kinds' constants [KindSecret] and [KindConfigMap]; run the plugin through
// its [Definition], and use these for tests and previews.
package replicate
