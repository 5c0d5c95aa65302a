package core_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/utils/ptr"

	"github.com/profilekit/profilekit/plugins/core"
)

// The owner's subject is sent as the API server stores it, whatever form
// the Profile names it in, so that it matches upstream's binding of the
// same owner field by field.
func TestOwnerSubject(t *testing.T) {
	const group = rbacv1.GroupName
	for _, tt := range []struct {
		reason string
		owner  rbacv1.Subject
		want   *rbacv1ac.SubjectApplyConfiguration
	}{
		{
			reason: "a User without apiGroup (kubectl's, KFAM's shape) gets the default group",
			owner:  rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"},
			want:   &rbacv1ac.SubjectApplyConfiguration{Kind: ptr.To("User"), APIGroup: ptr.To(group), Name: ptr.To("alice@example.org")},
		},
		{
			reason: "a User with apiGroup keeps it",
			owner:  rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: group, Name: "alice@example.org"},
			want:   &rbacv1ac.SubjectApplyConfiguration{Kind: ptr.To("User"), APIGroup: ptr.To(group), Name: ptr.To("alice@example.org")},
		},
		{
			reason: "a Group without apiGroup gets the default group",
			owner:  rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "ml-team"},
			want:   &rbacv1ac.SubjectApplyConfiguration{Kind: ptr.To("Group"), APIGroup: ptr.To(group), Name: ptr.To("ml-team")},
		},
		{
			reason: "a ServiceAccount has no group, and keeps its namespace",
			owner:  rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "ci", Namespace: "builds"},
			want:   &rbacv1ac.SubjectApplyConfiguration{Kind: ptr.To("ServiceAccount"), Name: ptr.To("ci"), Namespace: ptr.To("builds")},
		},
		{
			reason: "an unknown kind is sent as the Profile names it (the API server refuses it)",
			owner:  rbacv1.Subject{Kind: "Robot", Name: "r2"},
			want:   &rbacv1ac.SubjectApplyConfiguration{Kind: ptr.To("Robot"), Name: ptr.To("r2")},
		},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, core.OwnerSubject(tt.owner)); diff != "" {
				t.Errorf("OwnerSubject (-want +got):\n%s", diff)
			}
			p := profile("team-a", tt.owner.Name)
			p.Spec.Owner = tt.owner
			b := core.OwnerBinding(p)
			if diff := cmp.Diff([]rbacv1ac.SubjectApplyConfiguration{*tt.want}, b.Subjects); diff != "" {
				t.Errorf("OwnerBinding subjects (-want +got):\n%s", diff)
			}
		})
	}
}
