package access

import (
	"net/url"
	"regexp"
	"strings"
)

// The ClusterRoles that the access-management service (KFAM) binds, by the
// value of its role annotation.
var ClusterRoles = map[string]string{
	"admin": "kubeflow-admin",
	"edit":  "kubeflow-edit",
	"view":  "kubeflow-view",
}

var nonAlphanumeric = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// BindingName is the name the access-management service gives the
// RoleBinding (and the AuthorizationPolicy beside it) of a contributor:
// subject kind, name, role reference kind and name, joined by "-", lower
// case, every run of characters other than letters and digits made one "-".
// It is what KFAM computes, so that a binding made from a Profile and one
// made in the dashboard for the same person and role have the same name.
func BindingName(subjectKind, subjectName, roleRefKind, roleRefName string) string {
	raw := strings.ToLower(strings.Join([]string{
		subjectKind,
		url.QueryEscape(nonAlphanumeric.ReplaceAllString(subjectName, "-")),
		roleRefKind,
		roleRefName,
	}, "-"))
	return nonAlphanumeric.ReplaceAllString(raw, "-")
}

// ContributorBindingName is the name the access-management service gives
// the RoleBinding of a contributor of the given subject kind whose role
// annotation is role (admin, edit or view). The dashboard asks KFAM for the
// role by that short name, and KFAM names the binding after what it was
// asked for, not after the ClusterRole (ClusterRoles) the binding refers to:
// bob@example.org with role edit is user-bob-example-org-clusterrole-edit.
func ContributorBindingName(subjectKind, subjectName, role string) string {
	return BindingName(subjectKind, subjectName, "ClusterRole", role)
}
