package reconcilers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// wait shows a pass that waits (plugins.Result.Wait) on the plugin's
// condition, status Unknown with reason Waiting, and looks again after the
// pass's RequeueAfter. Waiting is not failing: no Warning Event, nothing
// counted as a failure; a Revoke that waits keeps its finalizer.
func (r *Reconciler) wait(ctx context.Context, p *kubeflowv1.Profile, res plugins.Result, prefix string) (reconcile.Result, error) {
	msg := plugins.ConditionMessage(plugins.ReasonWaiting, plugins.BoundMessage(prefix+"waiting for "+res.Waiting))
	cond := &kubeflowv1.ProfileCondition{Type: r.def.Condition(), Status: plugins.ConditionUnknown, Message: msg, ObservedGeneration: p.Generation}
	if _, err := r.setCondition(ctx, p, cond); err != nil {
		return reconcile.Result{}, err
	}
	d := res.RequeueAfter
	if d <= 0 {
		d = plugins.DefaultWait
	}
	return reconcile.Result{RequeueAfter: d}, nil
}

// pause answers a Profile the plugin applies to whose
// plugins.AnnotationPaused pauses the plugin: nothing is written for it,
// and the condition says so. The annotation's removal is a change of the
// Profile, which wakes it.
func (r *Reconciler) pause(ctx context.Context, p *kubeflowv1.Profile) (reconcile.Result, error) {
	msg := plugins.ConditionMessage(plugins.ReasonPaused, "paused by annotation "+plugins.AnnotationPaused+"; nothing is written until it goes")
	cond := &kubeflowv1.ProfileCondition{Type: r.def.Condition(), Status: plugins.ConditionUnknown, Message: msg, ObservedGeneration: p.Generation}
	_, err := r.setCondition(ctx, p, cond)
	return reconcile.Result{}, err
}
