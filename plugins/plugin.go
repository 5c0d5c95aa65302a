package plugins

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// Plugin manages one concern for one Profile at a time.
//
// Apply makes the concern's state match the Profile and the plugin's config; it
// may run again at any time, including while the Profile is being deleted, and a
// pass with nothing to change writes nothing. Revoke removes what Apply made; it
// treats objects that are already gone as done, and keeps user data unless the
// request's Retention says Delete.
//
// A plugin writes only objects that carry its ownership labels (the Applier sees
// to that), never modifies or deletes an object without them, and never touches
// the upstream controller's own objects (namespaceAdmin, default-editor,
// default-viewer, ns-owner-access-istio, kf-resource-quota, the namespace owner
// annotation), which only the core plugin makes. Invalid input is returned as a TerminalError so that it is
// reported, not retried.
type Plugin interface {
	// Kind is the name a Profile uses in spec.plugins[].kind.
	Kind() string
	// Apply brings the concern in line with the request.
	Apply(ctx context.Context, req Request) (Result, error)
	// Revoke removes the concern from the Profile.
	Revoke(ctx context.Context, req Request) (Result, error)
}

// Funcs adapts plain functions to a Plugin. A nil function does nothing.
type Funcs struct {
	// KindName is what Kind returns.
	KindName string
	// ApplyFunc is called by Apply.
	ApplyFunc func(ctx context.Context, req Request) (Result, error)
	// RevokeFunc is called by Revoke.
	RevokeFunc func(ctx context.Context, req Request) (Result, error)
}

var _ Plugin = Funcs{}

// Kind returns f.KindName.
func (f Funcs) Kind() string { return f.KindName }

// Apply calls f.ApplyFunc.
func (f Funcs) Apply(ctx context.Context, req Request) (Result, error) {
	if f.ApplyFunc == nil {
		return Result{}, nil
	}
	return f.ApplyFunc(ctx, req)
}

// Revoke calls f.RevokeFunc.
func (f Funcs) Revoke(ctx context.Context, req Request) (Result, error) {
	if f.RevokeFunc == nil {
		return Result{}, nil
	}
	return f.RevokeFunc(ctx, req)
}

// Cluster is the part of a Kubernetes client a plugin may use. Both a
// controller-runtime client.Client and a type that embeds one satisfy it.
type Cluster interface {
	client.Reader
	client.Writer
	client.StatusClient
}

// Retention says what Revoke does with user data (blob containers, volumes,
// databases).
type Retention string

const (
	// RetentionRetain keeps user data when a plugin is revoked. The default.
	RetentionRetain Retention = "Retain"
	// RetentionDelete deletes user data when a plugin is revoked.
	RetentionDelete Retention = "Delete"
)

// Request is one Apply or Revoke of one plugin for one Profile.
type Request struct {
	// Profile is the Profile being served. Plugins must not modify it:
	// hosts may hand a plugin their cache's own Profile, which other
	// passes read at the same time.
	Profile *kubeflowv1.Profile
	// Config is the plugin's decoded and validated config: a pointer to the
	// type its Definition's NewConfig returns. Use ConfigOf to read it.
	// Plugins must not modify it either: hosts may hand the same config to
	// every pass of the Profiles whose spec entry for the plugin is the same
	// (most often none), until the host's config changes.
	Config any
	// Client reads through the host's cache and writes to the API server.
	// The cache holds profilekit's objects only, and on a host that serves
	// a shard of the Profiles only those of its shard's Profiles: a plugin
	// that reads another Profile's objects (a check that a name or an
	// identity is free across the cluster) reads through Live or Watched.
	Client Cluster
	// Objects writes and prunes the plugin's objects for this Profile.
	Objects Objects
	// Retention is the host's policy for user data on Revoke.
	Retention Retention
	// Outside records what the plugin made true in systems outside the
	// cluster, so that a pass with nothing changed calls none of them. Hosts
	// write it after each pass.
	Outside Outside
	// Watched reads the kinds in the Definition's Watches from a cache that
	// holds every object of those kinds, not only ours. It is nil when the
	// host keeps no such cache; plugins then read through Client.
	Watched client.Reader
	// Live reads from the API server, without a cache: for the few reads a
	// pass must not take from a cache that may not yet show what changed a
	// moment before (an object to be deleted or overwritten, a claim a
	// volume is bound to). It is nil in hosts that have none, such as
	// offline rendering; read through LiveReader, which falls back to
	// Client.
	Live client.Reader
}

// LiveReader returns the request's reader without a cache, or its Client
// when the host gave none.
func (r Request) LiveReader() client.Reader {
	if r.Live != nil {
		return r.Live
	}
	return r.Client
}

// WatchedReader returns Watched, or Client when the host keeps no cache of
// the watched kinds (the upstream adapter's client reads everything).
func (r Request) WatchedReader() client.Reader {
	if r.Watched != nil {
		return r.Watched
	}
	return r.Client
}

// ConfigOf returns the request's config as *C, or an error when the host
// passed a config of another type.
func ConfigOf[C any](req Request) (*C, error) {
	c, ok := req.Config.(*C)
	if !ok || c == nil {
		var want *C
		return nil, fmt.Errorf("config is %T, want %T", req.Config, want)
	}
	return c, nil
}

// Definition is a Plugin together with what a host needs to run it.
type Definition struct {
	// Plugin does the work.
	Plugin Plugin
	// NewConfig returns a pointer to a new config that holds the plugin's
	// built-in defaults. Host defaults and the Profile's spec are decoded over
	// it; if it has a Validate() error method, that runs last. A top-level
	// field tagged `profilekit:"hostonly"` is set by the host alone: a
	// Profile's spec that sets it is refused. Nil means the plugin takes no
	// config, and any spec is rejected.
	NewConfig func() any
	// Owns lists the kinds of object the plugin writes. The host watches them
	// (only ours, by label) and the Applier prunes them.
	Owns []schema.GroupVersionKind
	// OwnsFrom, when set, returns further kinds the plugin writes, which its
	// host config names rather than its code: the kinds of the objects a
	// host templates, say. It gets the decoded host defaults (a pointer to
	// NewConfig's type, validated) and fails only on a config it cannot
	// read. A host calls ForHost once its config has loaded and runs the
	// Definition it returns, so that these kinds are watched, cached and
	// pruned as Owns are. A cluster may not serve a kind the config names:
	// the standalone host then leaves it unwatched, the Applier finds
	// nothing of it to prune, and the plugin reports it on the Profiles
	// that want it. The upstream adapter takes a Definition as it is given:
	// a fork passes it what ForHost returns.
	OwnsFrom func(hostConfig any) ([]schema.GroupVersionKind, error)
	// Reads lists the kinds among Owns whose objects the plugin reads in
	// full through Request.Client, such as a claim's status, and those whose
	// fields the API server does not track one by one in managed fields
	// (parts of a schema kept with x-kubernetes-preserve-unknown-fields, such
	// as an Argo CD Application's Helm values: a hand edit there can leave
	// managed fields as they were, so only a comparison of the bodies shows
	// it). The host caches those whole and every other owned kind as
	// metadata only (see CachedWhole): for those the Applier needs no more
	// than an object's labels, annotations and managed fields. A plugin that
	// reads an owned kind it does not list here still works, at the cost of
	// a second cache of the kind.
	Reads []schema.GroupVersionKind
	// Exclusive lists the kinds among Owns whose objects the plugin writes
	// whole and that nothing holds on to but by name (a PodDefault, a copy,
	// a Secret the plugin fills): a field that another manager set on one
	// of its objects is taken away with the object, which is deleted (ours,
	// by UID) and made again exactly as desired. For every other kind a
	// repair puts back what the plugin owns and leaves fields others own.
	Exclusive []schema.GroupVersionKind
	// OutsideState is true when the plugin keeps state outside the Profile's
	// namespace (another namespace, a database, a cloud). Such a plugin gets a
	// finalizer on the Profile so that Revoke runs before the Profile is gone.
	OutsideState bool
	// ConditionType overrides the Profile condition type, <Kind>Ready by default.
	ConditionType string
	// Watches lists kinds the plugin reads but does not write, whose changes
	// change what it wants for some Profiles. The host watches every object
	// of these kinds, whoever wrote it, and serves reads of them through
	// Request.Watched.
	Watches []Watch
	// Runner, when set, runs beside the plugin's controller for as long as
	// the host runs (and is leader), for inputs that live outside the
	// cluster, such as a poller of a policy server or a file the host
	// mounts. It tells the host which Profiles to reconcile through
	// Runtime.Enqueue, so that only those are reconciled, or through
	// Runtime.EnqueueAll when a change concerns every Profile. Hosts that run no manager (offline rendering, the
	// upstream adapter) do not run it; the plugin must then say what it
	// could not know. It returns when ctx ends.
	Runner func(ctx context.Context, rt Runtime) error
	// Upstream lets the plugin write the upstream profile controller's
	// objects: the Profile's namespace itself (cluster-scoped) and the names
	// that IsUpstreamName reports. Only the plugin of kind CoreKind, which
	// replaces that controller, may set it; NewRegistry refuses any other.
	// Everything else about the Applier stays: ownership labels, owner
	// references, and nothing outside the Profile's namespace.
	Upstream bool
}

// Runtime is what a Definition's Runner gets from the host.
type Runtime struct {
	// Config is the plugin's config from the host's defaults: a pointer to
	// the type NewConfig returns.
	Config any
	// RESTConfig reaches the API server as the host.
	RESTConfig *rest.Config
	// Reader reads from the API server without a cache, for the few reads
	// that must not widen the host's cache (a namespace's Pods, say).
	Reader client.Reader
	// Enqueue asks for the named Profiles to be reconciled. It may block
	// while the host's queue is full, and returns at once, dropping the
	// names, once the host stops: a Runner never hangs its shutdown on it.
	Enqueue func(profiles ...string)
	// EnqueueAll asks for every Profile the host serves to be reconciled,
	// under the same rules as Enqueue.
	EnqueueAll func()
}

// Watch is a kind of object a plugin reads but does not write, such as the
// RoleBindings that name a Profile's contributors, and how its objects map
// to Profiles.
type Watch struct {
	// Object is an empty object of the watched kind. A
	// *metav1.PartialObjectMetadata with its apiVersion and kind set watches
	// and caches metadata only (labels and annotations), which keeps the
	// objects' bodies out of the host's memory; prefer it when metadata is
	// all the plugin reads.
	Object client.Object
	// Profiles returns the names of the Profiles to reconcile when obj is
	// created, changed or deleted; none when it does not concern a Profile.
	// It runs for both the old and the new object of an update. Leave out
	// objects the plugin never reads (those another plugin wrote, say):
	// every name returned is a pass.
	Profiles func(ctx context.Context, obj client.Object) []string
	// Changed, when set, reports whether an update of a watched object
	// from before to after changed anything the plugin reads of it (a label it
	// manages or a guard it checks), given the host's config (the decoded
	// host defaults, as NewConfig's type). An update it returns false for
	// wakes no Profile: a watched object's updates that only touch what the
	// plugin does not read (other keys, managed fields, status) then cost
	// nothing. Creations and deletions always go to Profiles (or Carries).
	// Nil: every update does. The host also wakes a Profile for a watched
	// object only while the plugin applies to it or has something to take
	// back from it.
	Changed func(hostConfig any, before, after client.Object) bool
	// Scopes, when set, restricts the watch to the scopes it returns for the
	// host's config (the decoded host defaults, as NewConfig's type): the
	// host caches only objects of the kind inside them, one informer per
	// scope, never the kind cluster-wide. No scope means no watch at all.
	// Request.Watched serves the kind from these scopes only.
	Scopes func(hostConfig any) []Scope
	// Carries, when set, is asked instead of Profiles: for every Profile the
	// plugin applies to, with the Profile's decoded config, whether obj
	// concerns it. Only the Profiles it names are reconciled. Profiles whose
	// config does not decode are left out (their condition already says so).
	Carries func(obj client.Object, p *kubeflowv1.Profile, cfg any) bool
}

// Scope is one namespace, and optionally a name or a label selector in it,
// that a scoped Watch caches.
type Scope struct {
	// Namespace holds the watched objects. Required.
	Namespace string
	// Name, when set, restricts the scope to the object of that name.
	Name string
	// Labels, when set, restricts the scope to objects whose labels match.
	Labels labels.Selector
}

// Kind returns the kind of the definition's plugin.
func (d Definition) Kind() string { return d.Plugin.Kind() }

// ForHost returns d as a host runs it with hostConfig, its decoded defaults
// (see DecodeHostDefaults): Owns followed by the kinds OwnsFrom names that
// Owns does not hold yet, each once, in the order OwnsFrom gives them. A
// definition without OwnsFrom is returned as it is; calling ForHost on what
// it returned adds nothing.
func (d Definition) ForHost(hostConfig any) (Definition, error) {
	if d.OwnsFrom == nil {
		return d, nil
	}
	kinds, err := d.OwnsFrom(hostConfig)
	if err != nil {
		return d, Terminal(ReasonInvalidConfig, fmt.Errorf("plugin %s: owned kinds from the host config: %w", d.Kind(), err))
	}
	owns := slices.Clip(d.Owns)
	for _, gvk := range kinds {
		if !slices.Contains(owns, gvk) {
			owns = append(owns, gvk)
		}
	}
	d.Owns = owns
	return d, nil
}

// Condition returns the type of the condition the plugin reports on a Profile.
func (d Definition) Condition() string {
	if d.ConditionType != "" {
		return d.ConditionType
	}
	return ConditionTypeFor(d.Kind())
}

// Finalizer returns the finalizer the plugin puts on Profiles, or "" when it
// keeps no state outside the Profile's namespace.
func (d Definition) Finalizer() string {
	if !d.OutsideState {
		return ""
	}
	return FinalizerPrefix + d.Kind()
}
