package reconcilers

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// failed reports an Apply that failed. On its own the adapter returns err for
// upstream to log and retry. Under a Fork it reports err as the standalone
// reconciler does: the plugin's condition False with the reason, and a
// Warning Event when the condition changed. A terminal error (a spec the
// plugin refuses) is then logged, not returned, so that upstream, which stops
// at the first plugin error, goes on with the plugins after this one and does
// not retry what cannot succeed until the Profile changes; any other error is
// returned, and upstream retries it with backoff.
func (a *Adapter[R, P]) failed(obj P, p *kubeflowv1.Profile, err error, fallback string) error {
	if a.env == nil {
		return err
	}
	reason := plugins.ReasonOf(err, fallback)
	failuresTotal.WithLabelValues(a.def.Kind(), reason).Inc()
	cond := &kubeflowv1.ProfileCondition{Type: a.def.Condition(), Status: plugins.ConditionFalse, Message: plugins.FailureMessage(err, fallback), ObservedGeneration: p.Generation}
	if a.setCondition(p, cond) {
		a.env.recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Apply", "%s: %s", a.def.Kind(), plugins.BoundMessage(err.Error()))
	}
	if !plugins.IsTerminal(err) {
		return err
	}
	log.FromContext(a.ctx).Error(err, "plugin input cannot succeed until it changes", "plugin", a.def.Kind(), "profile", p.Name, "reason", reason)
	return nil
}

// applied reports a successful Apply on the plugin's condition.
func (a *Adapter[R, P]) applied(p *kubeflowv1.Profile, res plugins.Result) {
	observeResult(a.def.Kind(), res)
	if a.env == nil {
		return
	}
	inSync := len(res.Changes) - res.Count(plugins.Deleted)
	msg := appliedMessage(inSync)
	a.setCondition(p, &kubeflowv1.ProfileCondition{Type: a.def.Condition(), Status: plugins.ConditionTrue, Message: msg, ObservedGeneration: p.Generation})
}

// revokeWaits reports a Revoke that could not finish and returns its error,
// so that upstream keeps its finalizer and retries. Under a Fork the
// plugin's condition also says why, and what waits on it: False, with the
// reason of err (an outside system's, when one failed).
func (a *Adapter[R, P]) revokeWaits(obj P, p *kubeflowv1.Profile, err error, what string) error {
	err = fmt.Errorf("revoke %s: %w", a.def.Kind(), err)
	if a.env == nil {
		return err
	}
	reason := plugins.ReasonOf(err, plugins.ReasonRevokeFailed)
	failuresTotal.WithLabelValues(a.def.Kind(), reason).Inc()
	msg := plugins.ConditionMessage(reason, plugins.BoundMessage("revoke waits, "+what+": "+err.Error()))
	if a.setCondition(p, &kubeflowv1.ProfileCondition{Type: a.def.Condition(), Status: plugins.ConditionFalse, Message: msg, ObservedGeneration: p.Generation}) {
		a.env.recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Revoke", "%s: %s", a.def.Kind(), plugins.BoundMessage(err.Error()))
	}
	return err
}

// revoked reports a finished Revoke: an Event (and a Warning for the
// grants it found dangling), and the plugin's condition removed, so that
// the next pass knows there is nothing left to revoke.
func (a *Adapter[R, P]) revoked(obj P, p *kubeflowv1.Profile, res plugins.Result, dangled []string) {
	observeResult(a.def.Kind(), res)
	if a.env == nil {
		return
	}
	a.env.recorder.Eventf(obj, nil, corev1.EventTypeNormal, plugins.ReasonRevoked, "Revoke", "%s: %s", a.def.Kind(), plugins.BoundMessage(res.Summary()))
	if len(dangled) > 0 {
		a.env.recorder.Eventf(obj, nil, corev1.EventTypeWarning, outside.ReasonDanglingTrust, "Revoke", "%s: grants profilekit did not make outlive the Profile: %s",
			a.def.Kind(), plugins.BoundMessage(strings.Join(dangled, "; ")))
	}
	a.setCondition(p, nil)
}

// setCondition hands the plugin's condition (nil removes it) to the Fork's
// StatusWriter when it differs from what the Profile carries, and reports
// whether it did. The writer gathers the conditions of all plugins of a
// pass into one status write, with the Profile's Ready condition; when
// nothing changed but Ready is out of date, the writer is asked to look.
func (a *Adapter[R, P]) setCondition(p *kubeflowv1.Profile, c *kubeflowv1.ProfileCondition) bool {
	var changed bool
	if c == nil {
		_, changed = removeCondition(p.Status.Conditions, a.def.Condition())
	} else {
		_, changed = setCondition(p.Status.Conditions, *c)
	}
	switch {
	case changed:
		a.env.status.setOf(p, a.def.Condition(), c)
	case a.env.status.ReadyStale(p):
		a.env.status.Touch(p.Name)
	}
	return changed
}

// appliedMessage is a True condition's message: how many objects of the
// plugin's hold what it wants.
func appliedMessage(inSync int) string {
	noun := "objects"
	if inSync == 1 {
		noun = "object"
	}
	return plugins.ConditionMessage(plugins.ReasonApplied, fmt.Sprintf("%d %s in sync", inSync, noun))
}
