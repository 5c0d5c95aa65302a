package plugins

import (
	"slices"
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

// SetCondition returns conds with c in place of any condition of its type (or
// appended), and whether that changed anything. Other writers' conditions keep
// their order, so no two writers fight over it. conds is not modified.
func SetCondition(conds []kubeflowv1.ProfileCondition, c kubeflowv1.ProfileCondition) ([]kubeflowv1.ProfileCondition, bool) {
	old := FindCondition(conds, c.Type)
	if old != nil && *old == c {
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
