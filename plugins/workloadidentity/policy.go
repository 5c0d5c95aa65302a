package workloadidentity

import (
	"fmt"
	"slices"

	iam "google.golang.org/api/iam/v1"
)

// Member returns the IAM member of a Kubernetes service account in a
// workload identity pool: serviceAccount:<pool>[<namespace>/<name>].
func Member(pool, namespace, name string) string {
	return fmt.Sprintf("serviceAccount:%s[%s/%s]", pool, namespace, name)
}

// Resource returns the IAM resource name of a Google service account.
func Resource(project, email string) string {
	return fmt.Sprintf("projects/%s/serviceAccounts/%s", project, email)
}

// HasMembers reports whether every member holds role in p through a binding
// without a condition.
func HasMembers(p *iam.Policy, role string, members []string) bool {
	for _, m := range members {
		if !slices.ContainsFunc(p.Bindings, func(b *iam.Binding) bool {
			return b != nil && b.Role == role && b.Condition == nil && slices.Contains(b.Members, m)
		}) {
			return false
		}
	}
	return true
}

// Grant adds the members to the first binding of role without a condition
// (or a new one), and reports whether p changed. Other bindings, conditions,
// audit configs and the etag are left as they are.
func Grant(p *iam.Policy, role string, members []string) bool {
	if HasMembers(p, role, members) {
		return false
	}
	i := slices.IndexFunc(p.Bindings, func(b *iam.Binding) bool { return b != nil && b.Role == role && b.Condition == nil })
	if i < 0 {
		p.Bindings = append(p.Bindings, &iam.Binding{Role: role})
		i = len(p.Bindings) - 1
	}
	b := p.Bindings[i]
	for _, m := range members {
		if !slices.Contains(b.Members, m) {
			b.Members = append(b.Members, m)
		}
	}
	return true
}

// Revoke removes the members from the bindings of role without a condition,
// drops a binding left without members, and reports whether p changed.
// Conditional bindings are someone else's and stay.
func Revoke(p *iam.Policy, role string, members []string) bool {
	changed := false
	kept := p.Bindings[:0:0]
	for _, b := range p.Bindings {
		if b == nil || b.Role != role || b.Condition != nil {
			kept = append(kept, b)
			continue
		}
		left := slices.DeleteFunc(slices.Clone(b.Members), func(m string) bool { return slices.Contains(members, m) })
		if len(left) != len(b.Members) {
			changed = true
			b.Members = left
		}
		if len(b.Members) > 0 {
			kept = append(kept, b)
		}
	}
	if changed {
		p.Bindings = kept
	}
	return changed
}
