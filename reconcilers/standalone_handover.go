package reconcilers

// This file holds how the Reconciler of a plugin that replaces the upstream
// profile controller (core) takes that controller's finalizer off the
// Profiles it serves, when the host's config says so.

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// FinalizerHandOver is implemented by the host config of a plugin with
// Definition.Upstream (core's Config) to have the host take the upstream
// controller's finalizer off the Profiles it serves. HandedOverFinalizer
// returns that finalizer ("" for none: nothing is handed over) and the
// plugin kinds whose cleanup it guards in the upstream controller (its
// own plugins, such as WorkloadIdentity).
//
// The Reconciler removes the finalizer from a Profile, with a patch guarded
// by the resource version, only where nothing is left unguarded:
//
//   - a Profile not being deleted: once the plugin's condition is True, the
//     Profile-level Ready is True for its generation (when the host gathers
//     conditions, see WithStatusWriter), and for each guarded kind the
//     Profile lists, a plugin of this host serves it (its condition is True)
//     and holds its own finalizer (profilekit.dev/<kind>) on the Profile;
//   - a Profile being deleted: once the plugin served it (its condition is
//     there and True) and each guarded kind the Profile lists was served by
//     a plugin of this host (its condition is there): that plugin's own
//     finalizer guards its cleanup, or is gone because the cleanup is done.
//
// Elsewhere the finalizer stays: a Profile that lists a guarded kind that no
// plugin of this host serves keeps it for the upstream controller's
// cleanup.
//
// Each hand-over is recorded on the Profile (AnnotationHandedOver), in the
// patch that removes the finalizer. A finalizer that comes back afterwards
// was put back by another controller (the upstream one, still running):
// the Reconciler leaves it in place for a back-off (HandOverBackoff,
// doubling up to MaxHandOverBackoff), reports it once (the condition
// ConditionFinalizerHandOver, a Warning Event naming the field manager that
// put it back, the metric profilekit_finalizer_returns_total), and hands it
// over again when the back-off has passed; once a hand-over holds, the
// condition goes.
type FinalizerHandOver interface {
	HandedOverFinalizer() (finalizer string, guards []string)
}

// handedOver returns the finalizer the plugin's host config hands over,
// and the kinds it guards; "" when the plugin does not replace the upstream
// controller or the config hands nothing over.
func (r *Reconciler) handedOver() (string, []string) {
	h, ok := r.hostConfig.(FinalizerHandOver)
	if !r.def.Upstream || !ok {
		return "", nil
	}
	return h.HandedOverFinalizer()
}

// handOver removes the handed-over finalizer from p when handOverDue says
// it may go. On a Profile not being deleted, a finalizer that came back
// after an earlier hand-over is left in place for a back-off (another
// controller serves the Profile, see handOverOrHold), so that the host never
// takes it off in a loop against that controller. A Profile being deleted
// loses it at once: no finalizer can be added to it any more.
func (r *Reconciler) handOver(ctx context.Context, p *kubeflowv1.Profile) error {
	fin, _ := r.handedOver()
	if fin == "" {
		return nil
	}
	if !r.handOverDue(p) {
		return r.clearHandOver(ctx, p, fin)
	}
	if !p.DeletionTimestamp.IsZero() {
		return r.patchFinalizer(ctx, p, fin, false)
	}
	return r.handOverOrHold(ctx, p, fin)
}

// handOverDue reports whether p carries the handed-over finalizer and may
// lose it (see FinalizerHandOver).
func (r *Reconciler) handOverDue(p *kubeflowv1.Profile) bool {
	fin, guards := r.handedOver()
	if fin == "" || !controllerutil.ContainsFinalizer(p, fin) {
		return false
	}
	conds := p.Status.Conditions
	deleting := !p.DeletionTimestamp.IsZero()
	if !isTrue(conds, r.def.Condition(), p.Generation, !deleting) {
		return false
	}
	if !deleting && r.status != nil && !isTrue(conds, plugins.ConditionReady, p.Generation, true) {
		return false
	}
	for _, kind := range guards {
		if !plugins.Listed(p, kind) {
			continue
		}
		served := plugins.FindCondition(conds, plugins.ConditionTypeFor(kind)) != nil
		if deleting && served {
			continue
		}
		if !served || !isTrue(conds, plugins.ConditionTypeFor(kind), p.Generation, true) || !controllerutil.ContainsFinalizer(p, plugins.FinalizerPrefix+kind) {
			return false
		}
	}
	return true
}

// isTrue reports whether conds hold a True condition of type t, set from
// generation (or an unknown one, 0) when current.
func isTrue(conds []kubeflowv1.ProfileCondition, t string, generation int64, current bool) bool {
	c := plugins.FindCondition(conds, t)
	if c == nil || c.Status != plugins.ConditionTrue {
		return false
	}
	return !current || c.ObservedGeneration == 0 || c.ObservedGeneration == generation
}

// handOverReady passes updates after which the Profile's finalizer may be
// handed over: a status write that made the Profile Ready changes neither
// its generation nor its labels.
func (r *Reconciler) handOverReady() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			p, ok := e.ObjectNew.(*kubeflowv1.Profile)
			return ok && r.handOverDue(p)
		},
	}
}
