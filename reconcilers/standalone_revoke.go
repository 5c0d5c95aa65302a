package reconcilers

// This file holds how a Reconciler lets a plugin go: from a Profile that no
// longer enables it, and from a Profile being deleted.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// leftOn reports whether p shows the plugin was there: its condition or its
// finalizer.
func (r *Reconciler) leftOn(p *kubeflowv1.Profile) bool {
	fin := r.def.Finalizer()
	return fin != "" && controllerutil.ContainsFinalizer(p, fin) || plugins.FindCondition(p.Status.Conditions, r.def.Condition()) != nil
}

// revoke removes the plugin from a Profile it no longer applies to. Only a
// Profile that shows the plugin was there (its condition or finalizer) costs
// anything.
func (r *Reconciler) revoke(ctx context.Context, p *kubeflowv1.Profile) (reconcile.Result, error) {
	fin := r.def.Finalizer()
	hasFin := fin != "" && controllerutil.ContainsFinalizer(p, fin)
	if !r.leftOn(p) {
		if r.status != nil && r.status.ReadyStale(p) {
			r.status.Touch(p.Name)
		}
		return reconcile.Result{}, nil
	}
	res, err := r.runRevoke(ctx, p, r.settingsIn(ctx, p).hostConfig)
	if err != nil {
		return r.revokeWaits(ctx, p, err, "the plugin is no longer enabled for this Profile")
	}
	if res.Waiting != "" {
		return r.wait(ctx, p, res, "revoke waits, the plugin is no longer enabled for this Profile: ")
	}
	if _, err := r.setCondition(ctx, p, nil); err != nil {
		return reconcile.Result{}, err
	}
	if hasFin {
		return reconcile.Result{}, r.patchFinalizer(ctx, p, fin, false)
	}
	return reconcile.Result{}, nil
}

// finalize revokes a plugin with outside state from a Profile being deleted,
// then lets the Profile go. Plugins without outside state have no finalizer:
// owner references hand their objects to the garbage collector.
func (r *Reconciler) finalize(ctx context.Context, p *kubeflowv1.Profile) (reconcile.Result, error) {
	// The upstream controller's finalizer, which the host took over, must
	// not hold a Profile it served.
	if err := r.handOver(ctx, p); err != nil {
		return reconcile.Result{}, err
	}
	fin := r.def.Finalizer()
	if fin == "" || !controllerutil.ContainsFinalizer(p, fin) {
		return reconcile.Result{}, nil
	}
	s := r.settingsIn(ctx, p)
	cfg, err := r.decode(s, p)
	if err != nil {
		// A spec that no longer decodes must not keep the Profile forever.
		cfg = s.hostConfig
	}
	res, err := r.runRevoke(ctx, p, cfg)
	if err != nil {
		return r.revokeWaits(ctx, p, err, "the Profile is being deleted and waits for finalizer "+fin)
	}
	if res.Waiting != "" {
		return r.wait(ctx, p, res, "revoke waits, the Profile is being deleted and waits for finalizer "+fin+": ")
	}
	return reconcile.Result{}, r.patchFinalizer(ctx, p, fin, false)
}

// revokeWaits reports a Revoke that could not finish on the plugin's
// condition: False, with the reason of err (the outside system's, such as
// PostgreSQLError, when one failed) and what waits on it, so that a Profile
// stuck in deletion or a plugin stuck in removal says why where tools look.
// The Warning Event is recorded when the condition changes. The Revoke is
// always retried with backoff: nothing is let go until it succeeds.
func (r *Reconciler) revokeWaits(ctx context.Context, p *kubeflowv1.Profile, err error, what string) (reconcile.Result, error) {
	reason := plugins.ReasonOf(err, plugins.ReasonRevokeFailed)
	failuresTotal.WithLabelValues(r.def.Kind(), reason).Inc()
	msg := plugins.ConditionMessage(reason, plugins.BoundMessage("revoke waits, "+what+": "+err.Error()))
	cond := &kubeflowv1.ProfileCondition{Type: r.def.Condition(), Status: plugins.ConditionFalse, Message: msg, ObservedGeneration: p.Generation}
	changed, serr := r.setCondition(ctx, p, cond)
	if changed {
		r.recorder.Eventf(p, nil, corev1.EventTypeWarning, reason, "Revoke", "%s: %s", r.def.Kind(), plugins.BoundMessage(err.Error()))
	}
	return reconcile.Result{}, errors.Join(fmt.Errorf("revoke %s: %w", r.def.Kind(), err), serr)
}

// runRevoke runs the plugin's Revoke. A Revoke that waits is not done:
// nothing is recorded as revoked.
func (r *Reconciler) runRevoke(ctx context.Context, p *kubeflowv1.Profile, cfg any) (plugins.Result, error) {
	if ok, err := revokesUnderTenure(ctx, r.tenures(), p); !ok || err != nil {
		if err == nil {
			r.recorder.Eventf(p, nil, corev1.EventTypeNormal, ReasonTenureKept, "Revoke", "%s: the name is held for another owner; nothing was made for this Profile, and what is kept under the name is left as it is", r.def.Kind())
		}
		return plugins.Result{}, err
	}
	start := time.Now()
	req, record := r.request(ctx, p, cfg, r.own.pass())
	res, err := r.def.Plugin.Revoke(ctx, req)
	err = errors.Join(err, record.Flush(ctx))
	passSeconds.WithLabelValues(r.def.Kind(), "revoke").Observe(time.Since(start).Seconds())
	observeResult(r.def.Kind(), res)
	if err != nil || res.Waiting != "" {
		return res, err
	}
	r.recorder.Eventf(p, nil, corev1.EventTypeNormal, plugins.ReasonRevoked, "Revoke", "%s: %s", r.def.Kind(), plugins.BoundMessage(res.Summary()))
	if d := record.Dangled(); len(d) > 0 {
		r.recorder.Eventf(p, nil, corev1.EventTypeWarning, outside.ReasonDanglingTrust, "Revoke", "%s: grants profilekit did not make outlive the Profile: %s",
			r.def.Kind(), plugins.BoundMessage(strings.Join(d, "; ")))
	}
	return res, nil
}
