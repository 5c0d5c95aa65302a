package hostapp

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// wayBackWarnings returns what the upstream controller does differently
// for p once release hands it back: a Group owner's access, which upstream
// neither serves through the mesh nor lists, and a pause it does not know.
func wayBackWarnings(p *kubeflowv1.Profile) []string {
	var out []string
	if p.Spec.Owner.Kind == rbacv1.GroupKind {
		out = append(out,
			"owned by Group "+p.Spec.Owner.Name+": upstream rewrites ns-owner-access-istio to match the user id against the group's name, so members lose mesh access; KFAM and the dashboard do not list the namespace for them (give the members a contributor binding each, or keep the host)")
	}
	if v := strings.TrimSpace(p.Annotations[plugins.AnnotationPaused]); v != "" {
		out = append(out,
			"paused ("+plugins.AnnotationPaused+"="+v+"): upstream ignores the annotation and serves the Profile again on its next pass")
	}
	return out
}
