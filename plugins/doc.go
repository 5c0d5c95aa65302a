// Package plugins is the contract every profilekit concern implements, and the
// machinery they share.
//
// A plugin manages one concern (quotas, limit ranges, network policies, ...) for
// one Profile at a time. It builds the objects it wants with pure functions, and
// hands them to an [Applier], which writes them with server-side apply under the
// plugin's own field manager, labels them as ours, points their owner reference
// at the Profile, leaves alone what already matches, and deletes what is ours and
// no longer wanted.
//
// A [Definition] tells a host what it needs to run a plugin: its config type with
// built-in defaults, the kinds of objects it owns, and whether it keeps state
// outside the Profile's namespace (which earns it a finalizer on the Profile).
// The config a plugin sees is decoded strictly: built-in defaults, then the
// host's defaults, then the Profile's spec.plugins entry, then validated. Input
// that can never succeed is a [TerminalError] with a reason.
//
// State outside the cluster (blob containers, databases, cloud IAM bindings)
// goes through [Outside], one mechanism for every plugin: Ensure calls the
// outside system only when the desired state's hash differs from what the
// plugin's record (a small ConfigMap in the Profile's namespace) says was made
// true, when a host-set re-verification period has passed, or when the
// Profile's [AnnotationReverify] changed. Every call has a timeout and is
// counted by plugin, system and result; a failure is an [OutsideError], retried
// with backoff, whose reason names the system.
//
// Messages speak the Profile's language: a problem in a Profile's spec names
// its entry and field as the author wrote them (spec.plugins[0] (quotas).spec:
// unknown field "hardd"), one problem per line, and [FailureMessage] bounds
// what reaches a condition, an Event or an admission response to the first
// few problems and a count of the rest.
//
// Two hosts run plugins: the standalone controller-runtime reconciler and the
// upstream profile-controller adapter, both in package reconcilers.
package plugins
