package page

import (
	"strings"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Who can fix a False condition.
const (
	FixOwner    = "the namespace owner"
	FixPlatform = "the platform team"
	FixNobody   = "nobody: it settles by itself"
)

// Plugin is one plugin's condition on a Profile, in plain words.
type Plugin struct {
	// Kind is the plugin's kind (quotas for QuotasReady).
	Kind string
	// Type and Status are the condition's.
	Type, Status string
	// State is Ready, Not ready or Unknown.
	State string
	// Reason leads the message (the upstream schema has no reason field).
	Reason string
	// Message is the rest of the condition's message.
	Message string
	// Fix says who can fix a False condition; empty otherwise.
	Fix string
}

// explain puts a plugin's condition into plain words: the reason that
// leads its message says whose input is wrong. A Profile's spec or labels
// are the namespace owner's to change; the host's configuration, a
// conflict with objects of others, and failures of the API server or of
// an outside system are the platform's.
func explain(c kubeflowv1.ProfileCondition) Plugin {
	p := Plugin{Type: c.Type, Status: c.Status, Message: c.Message}
	if k := strings.TrimSuffix(c.Type, "Ready"); k != "" {
		p.Kind = strings.ToLower(k[:1]) + k[1:]
	}
	if reason, rest, ok := strings.Cut(c.Message, ": "); ok && isReason(reason) {
		p.Reason, p.Message = reason, rest
	} else if isReason(c.Message) {
		p.Reason, p.Message = c.Message, ""
	}
	switch c.Status {
	case plugins.ConditionTrue:
		p.State = "Ready"
	case plugins.ConditionFalse:
		p.State = "Not ready"
		p.Fix = fixer(p.Reason)
	default:
		p.State = "Unknown"
	}
	return p
}

// fixer returns who can fix a False condition of reason.
func fixer(reason string) string {
	switch reason {
	case plugins.ReasonInvalidSpec, plugins.ReasonInvalidLabel:
		return FixOwner
	case plugins.ReasonWaiting, plugins.ReasonPending:
		return FixNobody
	default:
		// Conflict, InvalidConfig, IdentityNotAllowed, Paused, the
		// ...Failed and ...Error reasons, and any reason unknown here.
		return FixPlatform
	}
}

// isReason reports whether s looks like a condition reason: one word in
// UpperCamelCase.
func isReason(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
