package reconcilers

// This file holds the Reconciler's writes to the Profile itself: its
// condition through the status subresource and its finalizer.

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// setCondition writes the plugin's condition (nil removes it) through the
// status subresource when it changed, retrying on conflict with a fresh read,
// or hands it to the StatusWriter. It reports whether the condition changed.
func (r *Reconciler) setCondition(ctx context.Context, p *kubeflowv1.Profile, c *kubeflowv1.ProfileCondition) (bool, error) {
	r.observe(ctx, p, c)
	next := func(conds []kubeflowv1.ProfileCondition) ([]kubeflowv1.ProfileCondition, bool) {
		if c == nil {
			return removeCondition(conds, r.def.Condition())
		}
		return setCondition(conds, *c)
	}
	// A removal follows a Revoke and is written at once: the condition is
	// what tells the next pass that the Revoke still has to happen. Any
	// condition still waiting in the StatusWriter must not bring it back.
	if r.status != nil && c == nil {
		r.status.Drop(p.Name, r.def.Condition())
	}
	if _, changed := next(p.Status.Conditions); !changed {
		if r.status != nil && r.status.ReadyStale(p) {
			r.status.Touch(p.Name)
		}
		return false, nil
	}
	if r.status != nil && c != nil {
		return r.status.setFor(p.Name, p, r.def.Condition(), c), nil
	}
	wrote := false
	first := true
	own(p)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
		}
		first = false
		conds, changed := next(p.Status.Conditions)
		if !changed {
			return nil
		}
		if r.status != nil {
			// The removal changes what Ready sums up: the same write
			// brings it up to date, or takes it away with the last
			// plugin that served the Profile.
			conds, _ = r.status.withReady(p, conds)
		}
		p.Status.Conditions = conds
		wrote = true
		return r.client.Status().Update(ctx, p)
	})
	if apierrors.IsNotFound(err) {
		return wrote, nil
	}
	if err != nil {
		return wrote, fmt.Errorf("write %s condition: %w", r.def.Condition(), err)
	}
	if wrote && r.status != nil && r.status.ReadyStale(p) {
		// Another plugin's condition changed meanwhile.
		r.status.Touch(p.Name)
	}
	return wrote, nil
}

// patchFinalizer adds or removes fin with a merge patch guarded by the
// resource version, so that other writers' finalizers survive.
func (r *Reconciler) patchFinalizer(ctx context.Context, p *kubeflowv1.Profile, fin string, add bool) error {
	own(p)
	patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if add {
		controllerutil.AddFinalizer(p, fin)
	} else {
		controllerutil.RemoveFinalizer(p, fin)
	}
	if err := r.client.Patch(ctx, p, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update finalizer %s: %w", fin, err)
	}
	return nil
}
