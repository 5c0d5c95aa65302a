package plugins

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// Condition statuses.
const (
	ConditionTrue    = "True"
	ConditionFalse   = "False"
	ConditionUnknown = "Unknown"
)

// ConditionTypeFor returns the condition type of a plugin kind: the kind with
// its first letter upper-cased, then "Ready" (quotas -> QuotasReady).
func ConditionTypeFor(kind string) string {
	r := []rune(kind)
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r) + "Ready"
}

// ConditionMessage joins a reason and a message: the upstream schema has no
// reason field, so the reason leads the message.
func ConditionMessage(reason, msg string) string {
	if msg == "" {
		return reason
	}
	return reason + ": " + msg
}

// FindCondition returns the condition of type t, or nil.
func FindCondition(conds []kubeflowv1.ProfileCondition, t string) *kubeflowv1.ProfileCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// SameCondition reports whether live already says what c says: the same
// type, status and message, and the same observed generation unless live's
// is 0. A live generation of 0 is unknown (a server whose schema drops the
// field, as upstream's does, or a condition written before it was kept), and
// a condition is not rewritten for it alone, so that a resync of such a
// Profile still writes nothing.
func SameCondition(live, c kubeflowv1.ProfileCondition) bool {
	return live.Type == c.Type && live.Status == c.Status && live.Message == c.Message &&
		(live.ObservedGeneration == c.ObservedGeneration || live.ObservedGeneration == 0)
}

// SetCondition returns conds with c in place of any condition of its type (or
// appended), and whether that changed anything (see SameCondition). Other
// writers' conditions keep their order, so no two writers fight over it.
// conds is not modified.
func SetCondition(conds []kubeflowv1.ProfileCondition, c kubeflowv1.ProfileCondition) ([]kubeflowv1.ProfileCondition, bool) {
	old := FindCondition(conds, c.Type)
	if old != nil && SameCondition(*old, c) {
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

// RemoveCondition returns conds without the condition of type t, and whether
// there was one. conds is not modified.
func RemoveCondition(conds []kubeflowv1.ProfileCondition, t string) ([]kubeflowv1.ProfileCondition, bool) {
	if FindCondition(conds, t) == nil {
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

// ConditionReady is the type of the Profile-level condition that sums up the
// plugins' conditions, the one `kubectl wait --for=condition=Ready` and
// health checks read.
const ConditionReady = "Ready"

// Reasons of the Ready condition that are not a plugin's.
const (
	// ReasonPluginsReady is Ready True: every plugin serving the Profile
	// reports True for its current generation.
	ReasonPluginsReady = "PluginsReady"
	// ReasonPending is Ready False while a plugin has not reported yet, or
	// not for the Profile's current generation.
	ReasonPending = "Pending"
)

// Ready returns the Profile-level Ready condition for a Profile of the given
// generation whose plugin conditions are conds, served by the plugins whose
// condition types are serving: True when each of those conditions is True
// and set from this generation (or from an unknown one, 0), else False with
// the first failing plugin's reason (in the order of serving) and the
// condition that says why. It carries the generation.
func Ready(generation int64, conds []kubeflowv1.ProfileCondition, serving []string) kubeflowv1.ProfileCondition {
	ready := kubeflowv1.ProfileCondition{Type: ConditionReady, Status: ConditionTrue, ObservedGeneration: generation}
	for _, t := range serving {
		c := FindCondition(conds, t)
		switch {
		case c == nil:
			ready.Status = ConditionFalse
			ready.Message = ConditionMessage(ReasonPending, t+" has not been reported yet")
		case c.Status != ConditionTrue:
			reason, msg, found := strings.Cut(c.Message, ": ")
			if !found {
				reason, msg = c.Message, ""
			}
			ready.Status = ConditionFalse
			ready.Message = ConditionMessage(reason, strings.TrimSuffix(t+" is "+c.Status+": "+msg, ": "))
		case c.ObservedGeneration != 0 && c.ObservedGeneration != generation:
			ready.Status = ConditionFalse
			ready.Message = ConditionMessage(ReasonPending, fmt.Sprintf("%s was set from generation %d, not %d yet", t, c.ObservedGeneration, generation))
		default:
			continue
		}
		return ready
	}
	ready.Message = ConditionMessage(ReasonPluginsReady, fmt.Sprintf("%d %s ready", len(serving), plural(len(serving), "plugin", "plugins")))
	return ready
}
