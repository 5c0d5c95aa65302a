package reconcilers

import (
	"fmt"
	"slices"
	"strings"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// sameCondition reports whether live already says what c says: the same
// type, status and message, and the same observed generation unless live's
// is 0. A live generation of 0 is unknown (a server whose schema drops the
// field, as upstream's does, or a condition written before it was kept), and
// a condition is not rewritten for it alone, so that a resync of such a
// Profile still writes nothing.
func sameCondition(live, c kubeflowv1.ProfileCondition) bool {
	return live.Type == c.Type && live.Status == c.Status && live.Message == c.Message &&
		(live.ObservedGeneration == c.ObservedGeneration || live.ObservedGeneration == 0)
}

// setCondition returns conds with c in place of any condition of its type (or
// appended), and whether that changed anything (see sameCondition). Other
// writers' conditions keep their order, so no two writers fight over it.
// conds is not modified.
func setCondition(conds []kubeflowv1.ProfileCondition, c kubeflowv1.ProfileCondition) ([]kubeflowv1.ProfileCondition, bool) {
	old := plugins.FindCondition(conds, c.Type)
	if old != nil && sameCondition(*old, c) {
		return conds, false
	}
	out := slices.Clone(conds)
	if old == nil {
		return append(out, c), true
	}
	for i := range out {
		if out[i].Type == c.Type {
			out[i] = c
		}
	}
	return out, true
}

// removeCondition returns conds without the condition of type t, and whether
// there was one. conds is not modified.
func removeCondition(conds []kubeflowv1.ProfileCondition, t string) ([]kubeflowv1.ProfileCondition, bool) {
	if plugins.FindCondition(conds, t) == nil {
		return conds, false
	}
	out := make([]kubeflowv1.ProfileCondition, 0, len(conds))
	for _, old := range conds {
		if old.Type != t {
			out = append(out, old)
		}
	}
	return out, true
}

// withReady returns conds with the Profile-level Ready condition as a
// Profile of the given generation, served by the plugins whose condition
// types are serving, should carry it (see readyCondition), and whether that
// changed anything. A Profile that no plugin serves carries no Ready: a
// host that serves nothing of a Profile writes nothing onto it, and takes
// away the Ready it wrote while it served it. conds is not modified.
func withReady(generation int64, conds []kubeflowv1.ProfileCondition, serving []string) ([]kubeflowv1.ProfileCondition, bool) {
	if len(serving) == 0 {
		return removeCondition(conds, plugins.ConditionReady)
	}
	return setCondition(conds, readyCondition(generation, conds, serving))
}

// readyCondition returns the Profile-level Ready condition for a Profile of the given
// generation whose plugin conditions are conds, served by the plugins whose
// condition types are serving (at least one): True when each of those
// conditions is True and set from this generation (or from an unknown one,
// 0), else False with the first failing plugin's reason (in the order of
// serving) and the condition that says why. It carries the generation.
func readyCondition(generation int64, conds []kubeflowv1.ProfileCondition, serving []string) kubeflowv1.ProfileCondition {
	ready := kubeflowv1.ProfileCondition{Type: plugins.ConditionReady, Status: plugins.ConditionTrue, ObservedGeneration: generation}
	for _, t := range serving {
		c := plugins.FindCondition(conds, t)
		switch {
		case c == nil:
			ready.Status = plugins.ConditionFalse
			ready.Message = plugins.ConditionMessage(plugins.ReasonPending, t+" has not been reported yet")
		case c.Status != plugins.ConditionTrue:
			reason, msg, found := strings.Cut(c.Message, ": ")
			if !found {
				reason, msg = c.Message, ""
			}
			ready.Status = plugins.ConditionFalse
			ready.Message = plugins.ConditionMessage(reason, strings.TrimSuffix(t+" is "+c.Status+": "+msg, ": "))
		case c.ObservedGeneration != 0 && c.ObservedGeneration != generation:
			ready.Status = plugins.ConditionFalse
			ready.Message = plugins.ConditionMessage(plugins.ReasonPending, fmt.Sprintf("%s was set from generation %d, not %d yet", t, c.ObservedGeneration, generation))
		default:
			continue
		}
		return ready
	}
	ready.Message = plugins.ConditionMessage(plugins.ReasonPluginsReady, fmt.Sprintf("%d %s ready", len(serving), pluginsWord(len(serving))))
	return ready
}

// pluginsWord returns "plugin" or "plugins" for n.
func pluginsWord(n int) string {
	if n == 1 {
		return "plugin"
	}
	return "plugins"
}
