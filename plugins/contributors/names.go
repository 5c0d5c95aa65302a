package contributors

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/profilekit/profilekit/plugins/internal/access"
)

// BindingName is the name of a contributor's RoleBinding and of the
// AuthorizationPolicy beside it: the one the access-management service
// (KFAM) gives them when a contributor is added in the dashboard. KFAM joins
// the subject's kind and name, "ClusterRole" and the role as the dashboard
// names it (edit, not kubeflow-edit), lower-cases the result and makes each
// run of characters other than letters and digits one "-"; for example
// user-alice-example-org-clusterrole-edit.
//
// The name starts with the subject's kind and ends with the role, so it is
// never one of the upstream controller's names (namespaceAdmin and
// default-editor among them): those neither start with user-, group- or
// serviceaccount- nor end with -clusterrole-admin, -edit or -view.
// Different subjects may meet in one name (alice.b and alice-b); a Profile
// that declares both gets neither (see Build).
func BindingName(kind, name, role string) string {
	return access.ContributorBindingName(kind, name, role)
}

// ClusterRole is the ClusterRole a role binds: kubeflow-admin,
// kubeflow-edit or kubeflow-view; empty for any other role.
func ClusterRole(role string) string { return access.ClusterRoles[role] }

// checkDomainPattern fails on a userDomains pattern that is not of the form
// <local>@<domain>, where "*" stands for one or more characters other than
// "@".
func checkDomainPattern(p string) error {
	local, domain, ok := strings.Cut(p, "@")
	switch {
	case !ok || strings.Contains(domain, "@"):
		return fmt.Errorf("%q: want one \"@\", as in *@example.org", p)
	case local == "" || domain == "":
		return fmt.Errorf("%q: want text on both sides of the \"@\", as in *@example.org", p)
	case strings.TrimSpace(p) != p || strings.ContainsAny(p, " \t\n"):
		return fmt.Errorf("%q: white space", p)
	case strings.Contains(p, "**"):
		return fmt.Errorf("%q: \"**\" means no more than \"*\"", p)
	}
	if domain == "*" {
		return errors.New("\"" + p + "\": the domain must not be \"*\" alone, which allows every domain (leave userDomains empty for that)")
	}
	return nil
}

// domainPattern compiles a pattern that passed checkDomainPattern.
func domainPattern(p string) *regexp.Regexp {
	parts := strings.Split(p, "*")
	for i, s := range parts {
		parts[i] = regexp.QuoteMeta(s)
	}
	return regexp.MustCompile("^" + strings.Join(parts, "[^@]+") + "$")
}

// allowedUser reports whether name matches one of patterns; any name does
// when there are none.
func allowedUser(patterns []string, name string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if domainPattern(p).MatchString(name) {
			return true
		}
	}
	return false
}
