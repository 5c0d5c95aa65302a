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
	// Title says what the plugin gives the namespace in a user's words
	// ("Resource quota"), the kind itself for a plugin this page does not
	// know.
	Title string
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
	p.Title = titles[c.Type]
	if p.Title == "" {
		p.Title = p.Kind
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

// titles are the built-in plugins' conditions in a user's words.
var titles = map[string]string{
	"CoreReady":                    "Namespace and owner's access",
	"QuotasReady":                  "Resource quota",
	"LimitRangeReady":              "Container defaults",
	"NetworkReady":                 "Network policies",
	"RbacReady":                    "Roles",
	"ContributorsReady":            "Contributors",
	"AuthpolicyReady":              "Access through the mesh",
	"NamespacemetaReady":           "Namespace labels",
	"NotebookReady":                "Notebook configurations",
	"VolumesReady":                 "Personal volumes",
	"BlobcsiReady":                 "Blob storage",
	"BudgetsReady":                 "Team budget",
	"AwsIamForServiceAccountReady": "AWS identity",
	"WorkloadIdentityReady":        "Google Cloud identity",
	"AzureWorkloadIdentityReady":   "Azure identity",
	"GiteaReady":                   "Gitea",
	"AppsReady":                    "Apps",
	"ReplicateReady":               "Shared settings",
	"EgressReady":                  "Reach outside the cluster",
	"ExposeReady":                  "Published services",
	"TemplatesReady":               "Platform objects",
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
