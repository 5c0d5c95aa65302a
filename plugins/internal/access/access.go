// Package access builds the Istio rules that let a Profile's groups in
// through the ingress gateway, and checks that a user's or group's name can
// be matched exactly by Istio's string matcher.
//
// Istio matches a condition value exactly, by prefix ("abc*"), by suffix
// ("*abc") or by presence ("*"); nothing else. A groups header holds the
// user's groups joined by a separator (oauth2-proxy joins them with ","), so
// a group is matched exactly when it is the whole header, the first entry or
// the last: the values are g, "g,*" and "*,g". A group between two others
// cannot be matched by a header condition; the JWT claim, which Istio matches
// against every element of a list claim, has no such limit. A name holding
// the separator or a "*" could match more than itself, so it is refused.
package access

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	securityv1beta1 "istio.io/api/security/v1beta1"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultSeparator joins the groups in the groups header.
const DefaultSeparator = ","

// Groups says where the mesh finds the groups of a request's user.
type Groups struct {
	// Header is the request header in which the authenticating proxy passes
	// the user's groups, such as kubeflow-groups. Like the user-id header, it
	// counts only on requests from the gateway principals. Empty: no header.
	Header string `json:"header,omitempty"`
	// Separator joins the groups in Header. Default ",".
	Separator string `json:"separator,omitempty"`
	// Claim is the JWT claim that lists the groups, read as
	// request.auth.claims[<claim>], for meshes that verify the token
	// themselves (a RequestAuthentication). Empty: no claim.
	Claim string `json:"claim,omitempty"`
}

// Enabled reports whether the mesh can learn a request's groups.
func (g Groups) Enabled() bool { return g.Header != "" || g.Claim != "" }

func (g Groups) separator() string {
	if g.Separator == "" {
		return DefaultSeparator
	}
	return g.Separator
}

// Validate checks the header name, the separator and the claim.
func (g Groups) Validate(at *fieldpath.Path) error {
	var errs []error
	if g.Header != "" && !IsHeaderName(g.Header) {
		errs = append(errs, fmt.Errorf("%s %q: not an HTTP header name", at.Child("header"), g.Header))
	}
	if s := g.Separator; s != "" && (strings.TrimSpace(s) == "" || strings.Contains(s, "*")) {
		errs = append(errs, fmt.Errorf("%s %q: want a character such as \",\", not blank and not \"*\"", at.Child("separator"), s))
	}
	if c := g.Claim; c != "" && (strings.ContainsAny(c, "[]*") || strings.TrimSpace(c) != c || strings.ContainsAny(c, " \t\n")) {
		errs = append(errs, fmt.Errorf("%s %q: want a claim name without brackets, \"*\" or white space", at.Child("claim"), c))
	}
	return errors.Join(errs...)
}

// CheckUser fails when name, the user-id prefix included, cannot be matched
// exactly: it is empty, or it starts or ends with Istio's wildcard "*".
func CheckUser(name string) error {
	switch {
	case name == "":
		return errors.New("user name is empty")
	case strings.HasPrefix(name, "*") || strings.HasSuffix(name, "*"):
		return fmt.Errorf("user %q: Istio would read the \"*\" as a wildcard and admit more than this user", name)
	}
	return nil
}

// CheckGroup fails when name cannot be matched exactly: it is empty, holds
// the header's separator or a "*", or has white space at either end.
func (g Groups) CheckGroup(name string) error {
	switch {
	case name == "":
		return errors.New("group name is empty")
	case strings.Contains(name, "*"):
		return fmt.Errorf("group %q: Istio would read the \"*\" as a wildcard and admit more than this group", name)
	case g.Header != "" && strings.Contains(name, g.separator()):
		return fmt.Errorf("group %q holds the groups header's separator %q: it could not be told from two groups", name, g.separator())
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("group %q: white space at either end", name)
	}
	return nil
}

// HeaderKey is the Istio attribute of a request header.
func HeaderKey(header string) string { return "request.headers[" + header + "]" }

// ClaimKey is the Istio attribute of a JWT claim.
func ClaimKey(claim string) string { return "request.auth.claims[" + claim + "]" }

// HeaderValues are the values of the groups header condition that match the
// group exactly: alone, first or last.
func (g Groups) HeaderValues(group string) []string {
	sep := g.separator()
	return []string{group, group + sep + "*", "*" + sep + group}
}

// Rules returns the ALLOW rules that admit a member of any of groups, from
// the given principals: one for the header and one for the claim, as
// configured. groups must have passed CheckGroup; none gives no rule.
func (g Groups) Rules(principals []string, groups []string) []*securityv1beta1.Rule {
	if len(groups) == 0 || !g.Enabled() {
		return nil
	}
	groups = slices.Compact(slices.Sorted(slices.Values(groups)))
	from := func() []*securityv1beta1.Rule_From {
		return []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: slices.Clone(principals)}}}
	}
	var rules []*securityv1beta1.Rule
	if g.Header != "" {
		var values []string
		for _, n := range groups {
			values = append(values, g.HeaderValues(n)...)
		}
		rules = append(rules, &securityv1beta1.Rule{
			From: from(),
			When: []*securityv1beta1.Condition{{Key: HeaderKey(g.Header), Values: values}},
		})
	}
	if g.Claim != "" {
		rules = append(rules, &securityv1beta1.Rule{
			From: from(),
			When: []*securityv1beta1.Condition{{Key: ClaimKey(g.Claim), Values: groups}},
		})
	}
	return rules
}

// IsHeaderName reports whether s is an HTTP header field name (an RFC 9110
// token).
func IsHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}
