package reconcilers

// This file holds which events concern a plugin: an event wakes a Profile
// only when the pass it asks for could do something, that is when what
// changed is something the plugin reads. The controller-runtime way is a
// predicate per watch (builder.WithPredicates), as Kubernetes' own
// controllers wake on exactly the changes they read.

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// cached reads the Profile named name from the cache, without a copy: the
// caller only reads it. It returns nil when the Profile is not there or
// the read fails; a pass then decides.
func (r *Reconciler) cached(ctx context.Context, name string) *kubeflowv1.Profile {
	var p kubeflowv1.Profile
	if err := r.client.Get(ctx, types.NamespacedName{Name: name}, &p, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	return &p
}

// gated reports whether a pass over p would stop at the namespace gate
// (WithNamespaceGate) and do nothing else: the plugin applies to p, p is
// neither being deleted nor paused, and the core plugin's namespace for it
// is not there. A failed read says no: the pass decides.
func (r *Reconciler) gated(ctx context.Context, p *kubeflowv1.Profile) bool {
	if r.namespaceGate == nil || r.def.Upstream || !p.DeletionTimestamp.IsZero() ||
		!r.shard.Matches(labels.Set(p.Labels)) || !r.Applies(p) || plugins.Paused(p, r.def.Kind()) {
		return false
	}
	ready, err := r.namespaceReady(ctx, p)
	return err == nil && !ready
}

// notGated drops the events of Profiles whose pass would stop at the
// namespace gate: the namespace's own event (gateWakes) brings them back
// when it is there. Such a Profile counts as passed (FirstPass), as the
// pass that stopped at the gate did. Deletions always pass.
func (r *Reconciler) notGated() predicate.Predicate {
	keep := func(o client.Object) bool {
		p, ok := o.(*kubeflowv1.Profile)
		if !ok {
			return true
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
		defer cancel()
		if r.gated(ctx, p) {
			r.firstPass.passed(p.Name)
			return false
		}
		return true
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return keep(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return keep(e.ObjectNew) },
		GenericFunc: func(e event.GenericEvent) bool { return keep(e.Object) },
	}
}

// gateOpen reports whether ns, a namespace, lets the plugins of the Profile
// its labels name write into it (see namespaceReady).
func gateOpen(ns client.Object) bool {
	l := ns.GetLabels()
	return plugins.IsOwnedBy(l, plugins.CoreKind, l[plugins.LabelProfile]) && ns.GetDeletionTimestamp().IsZero()
}

// gateChanged passes the updates of a namespace that open or close the
// namespace gate: its ownership or its deletion. Labels and annotations the
// plugins write there (namespacemeta's, the core plugin's) do not.
func gateChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return gateOpen(e.ObjectOld) != gateOpen(e.ObjectNew) },
	}
}

// gateWakes keeps, of the requests f maps a namespace to, the Profiles the
// namespace gate holds or could hold: those the plugin applies to, not
// being deleted, whose namespace the core plugin makes. A plugin that does
// not apply to a Profile never waits for its namespace.
func (r *Reconciler) gateWakes(f handler.MapFunc) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		reqs := f(ctx, o)
		kept := reqs[:0]
		for _, req := range reqs {
			p := r.cached(ctx, req.Name)
			if p != nil && p.DeletionTimestamp.IsZero() && r.shard.Matches(labels.Set(p.Labels)) && r.Applies(p) && r.namespaceGate(p) {
				kept = append(kept, req)
			}
		}
		return kept
	}
}

// concerned keeps, of the requests f maps a watched object to, the
// Profiles the plugin applies to or has something to take back from (its
// condition or finalizer), and those being deleted: a pass over any other
// Profile does nothing whatever the object holds. A Profile not in the
// cache (a namespace of no Profile, or one whose event is yet to come)
// is left out: its own creation brings a pass, which reads what is
// watched by then.
func (r *Reconciler) concerned(f handler.MapFunc) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		reqs := f(ctx, o)
		kept := reqs[:0]
		for _, req := range reqs {
			p := r.cached(ctx, req.Name)
			if p != nil && r.shard.Matches(labels.Set(p.Labels)) &&
				(!p.DeletionTimestamp.IsZero() || r.Applies(p) || r.leftOn(p)) {
				kept = append(kept, req)
			}
		}
		return kept
	}
}

// changed passes the updates of a watched object that watch.Changed says
// the plugin reads; every update when it is nil.
func (r *Reconciler) changed(watch plugins.Watch) predicate.Predicate {
	if watch.Changed == nil {
		return predicate.Funcs{}
	}
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return watch.Changed(r.hostConfig, e.ObjectOld, e.ObjectNew) },
	}
}
