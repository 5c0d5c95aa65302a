package access

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The names below are what the access-management service's getBindingName
// gives: the subject's name with every run of characters other than ASCII
// letters and digits made one "-", joined with the kinds and the role's
// name, lower case.
func TestBindingName(t *testing.T) {
	tests := []struct {
		reason                         string
		kind, name, roleKind, roleName string
		want                           string
	}{
		{"a user bound to kubeflow-edit by its ClusterRole's name", "User", "bob@example.org", "ClusterRole", "kubeflow-edit", "user-bob-example-org-clusterrole-kubeflow-edit"},
		{"a group", "Group", "ml-team", "ClusterRole", "kubeflow-view", "group-ml-team-clusterrole-kubeflow-view"},
		{"a service account", "ServiceAccount", "pipeline-runner", "ClusterRole", "kubeflow-edit", "serviceaccount-pipeline-runner-clusterrole-kubeflow-edit"},
		{"dots and pluses become one - each run", "User", "first.last+ml@example.org", "ClusterRole", "kubeflow-edit", "user-first-last-ml-example-org-clusterrole-kubeflow-edit"},
		{"upper case is lowered after the replacement", "User", "Bob.Smith@Example.ORG", "ClusterRole", "kubeflow-admin", "user-bob-smith-example-org-clusterrole-kubeflow-admin"},
		{"letters outside ASCII are replaced too", "User", "zoë@example.org", "ClusterRole", "kubeflow-edit", "user-zo-example-org-clusterrole-kubeflow-edit"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, BindingName(tc.kind, tc.name, tc.roleKind, tc.roleName)); diff != "" {
				t.Errorf("BindingName (-want +got):\n%s", diff)
			}
		})
	}
}

// The dashboard asks KFAM for a contributor with role edit (its roleRef
// name), and KFAM names the binding after that, annotating it role: edit,
// while the binding itself refers to ClusterRole kubeflow-edit.
func TestContributorBindingName(t *testing.T) {
	tests := []struct {
		reason           string
		kind, name, role string
		want             string
	}{
		{"a user contributor as the dashboard adds one", "User", "bob@example.org", "edit", "user-bob-example-org-clusterrole-edit"},
		{"a group contributor", "Group", "ml-team", "edit", "group-ml-team-clusterrole-edit"},
		{"a viewer group", "Group", "ml-team", "view", "group-ml-team-clusterrole-view"},
		{"a service account", "ServiceAccount", "pipeline-runner", "view", "serviceaccount-pipeline-runner-clusterrole-view"},
		{"dots and pluses", "User", "first.last+ml@example.org", "edit", "user-first-last-ml-example-org-clusterrole-edit"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ContributorBindingName(tc.kind, tc.name, tc.role)); diff != "" {
				t.Errorf("ContributorBindingName (-want +got):\n%s", diff)
			}
		})
	}
}
