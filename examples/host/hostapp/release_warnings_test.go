package hostapp

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

func TestWayBackWarnings(t *testing.T) {
	group := "owned by Group team-ml: upstream rewrites ns-owner-access-istio to match the user id against the group's name, so members lose mesh access; KFAM and the dashboard do not list the namespace for them (give the members a contributor binding each, or keep the host)"
	for _, tc := range []struct {
		reason      string
		owner       rbacv1.Subject
		annotations map[string]string
		want        []string
	}{
		{reason: "a user's Profile: nothing to say", owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"}},
		{reason: "a Group owner", owner: rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "team-ml"}, want: []string{group}},
		{reason: "paused", owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"}, annotations: map[string]string{plugins.AnnotationPaused: "quotas"},
			want: []string{"paused (profilekit.dev/paused=quotas): upstream ignores the annotation and serves the Profile again on its next pass"}},
		{reason: "an empty pause is none", owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"}, annotations: map[string]string{plugins.AnnotationPaused: " "}},
		{reason: "both", owner: rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "team-ml"}, annotations: map[string]string{plugins.AnnotationPaused: "true"},
			want: []string{group, "paused (profilekit.dev/paused=true): upstream ignores the annotation and serves the Profile again on its next pass"}},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: tc.annotations}, Spec: kubeflowv1.ProfileSpec{Owner: tc.owner}}
			if d := cmp.Diff(tc.want, wayBackWarnings(p)); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
		})
	}
}
