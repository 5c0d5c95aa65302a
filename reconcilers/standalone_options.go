package reconcilers

// This file holds the options of New, which configure a Reconciler.

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// DefaultResync is how often every Profile is reconciled when nothing changes.
const DefaultResync = 10 * time.Minute

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithDefaults sets the host's defaults for the plugin's config, as JSON.
func WithDefaults(defaults []byte) Option {
	return func(r *Reconciler) { r.defaults = defaults }
}

// WithEnabledForAll applies the plugin to every Profile whose labels match
// selector (nil for every Profile), whether or not it lists the plugin.
func WithEnabledForAll(selector labels.Selector) Option {
	return func(r *Reconciler) {
		r.enabledForAll = true
		if selector != nil {
			r.selector = selector
		}
	}
}

// WithShard narrows the Reconciler to Profiles whose labels match selector, so
// that several hosts can share one cluster. Profiles outside the shard are
// left entirely alone. Every object the Reconciler writes carries its
// Profile's values of the selector's label keys, under keys of
// profilekit's own (apply.WithShardLabels), so that a cache made by
// CacheOptions with the same selector holds the shard's objects only.
func WithShard(selector labels.Selector) Option {
	return func(r *Reconciler) {
		if selector != nil {
			r.shard = selector
		}
	}
}

// WithResync sets how often each Profile is reconciled with nothing changed.
// Each Profile comes back at an offset within the period that its name
// fixes, so that Profiles spread out evenly over it.
func WithResync(d time.Duration) Option {
	return func(r *Reconciler) { r.resync = d }
}

// WithRequestTimeout bounds each request a reconcile sends to the API server
// (DefaultRequestTimeout unless set), so that no input, however large, holds
// a worker: a request that runs out of time fails and is retried with backoff.
func WithRequestTimeout(d time.Duration) Option {
	return func(r *Reconciler) { r.timeout = d }
}

// WithRetention sets what Revoke does with user data.
func WithRetention(ret plugins.Retention) Option {
	return func(r *Reconciler) { r.retention = ret }
}

// DefaultConcurrency is how many Profiles a plugin serves at once unless
// WithConcurrency says otherwise. A pass spends most of its time waiting on
// the API server: with 4, one plugin rolling out a change (new quota
// defaults) could not keep the server busy, and a plugin with several
// objects a Profile lagged behind the others; 16 took a 1,000-Profile
// convergence of the benchmark's small configuration from 19.6 s to 14.3 s
// and the rollout from 422 to 649 objects/s (see bench/README.md).
const DefaultConcurrency = 16

// WithConcurrency sets how many Profiles the plugin serves at once.
func WithConcurrency(n int) Option {
	return func(r *Reconciler) { r.concurrency = n }
}

// WithOutside sets how the plugin's outside calls are timed out and how
// often outside state is verified again with nothing changed.
func WithOutside(o outside.Options) Option {
	return func(r *Reconciler) { r.outside = o }
}

// WithStatusWriter hands the plugin's condition writes to w, which a host
// shares between its plugins so that a Profile's conditions are written
// together. Without it, each reconcile writes its condition itself.
func WithStatusWriter(w *StatusWriter) Option {
	return func(r *Reconciler) { r.status = w }
}

// WithPrecedence makes the plugin's passes that only confirm wait for the
// urgent passes of every Reconciler sharing p (see Precedence).
func WithPrecedence(p *Precedence) Option {
	return func(r *Reconciler) { r.precedence = p }
}

// WithNamespaceGate makes the plugin wait, for each Profile that makes
// true, until the core plugin has made the Profile's namespace: until then
// the plugin sends nothing and reports nothing, and the namespace's creation
// wakes it. Without it a plugin racing core would fail into a namespace that
// does not exist yet, retry with backoff and report each failure. Hosts set
// it on every plugin but core when core runs, with core's enablement as
// covers.
func WithNamespaceGate(covers func(*kubeflowv1.Profile) bool) Option {
	return func(r *Reconciler) { r.namespaceGate = covers }
}

// WithCachedWhole makes the Reconciler watch and read kinds whole, not as
// metadata only, also when its own plugin does not read them whole: hosts
// pass WholeKinds of every plugin they run, so that a kind that one
// plugin reads whole and another only owns is cached once.
func WithCachedWhole(kinds ...schema.GroupVersionKind) Option {
	return func(r *Reconciler) { r.whole = append(r.whole, kinds...) }
}

// WithEventRecorder replaces the manager's event recorder.
func WithEventRecorder(rec events.EventRecorder) Option {
	return func(r *Reconciler) { r.recorder = rec }
}
