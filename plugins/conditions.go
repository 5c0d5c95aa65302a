package plugins

import (
	"unicode"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// Condition statuses, and the Profile-level condition with the reasons it
// has that are not a plugin's.
const (
	ConditionTrue    = "True"
	ConditionFalse   = "False"
	ConditionUnknown = "Unknown"
	// ConditionReady is the type of the Profile-level condition that sums
	// up the plugins' conditions, the one `kubectl wait
	// --for=condition=Ready` and health checks read.
	ConditionReady = "Ready"
	// ReasonPluginsReady is Ready True: every plugin serving the Profile
	// reports True for its current generation.
	ReasonPluginsReady = "PluginsReady"
	// ReasonPending is Ready False while a plugin has not reported yet, or
	// not for the Profile's current generation.
	ReasonPending = "Pending"
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
