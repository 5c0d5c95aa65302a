package authpolicy

import (
	"slices"

	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	securityv1ac "istio.io/client-go/pkg/applyconfiguration/security/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/placeholders"
)

// The annotations by which the access-management service marks a RoleBinding
// that makes a user a contributor of a Profile, and the user's role.
const (
	AnnotationUser = "user"
	AnnotationRole = "role"
)

// checkTemplate fails on a placeholder other than {{ .Namespace }} and
// {{ .Profile }}, and on stray braces, so that a typo is found at load.
func checkTemplate(s string) error {
	return placeholders.Check(s, placeholders.Namespace, placeholders.Profile)
}

// expander puts a Profile's values into placeholders.
type expander struct{ placeholders.Values }

func (e expander) one(s string) string { return placeholders.Expand(s, e.Values) }

func (e expander) all(values []string) []string {
	if len(values) == 0 {
		return nil
	}
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = e.one(v)
	}
	return out
}

// Contributors returns the users that the RoleBindings make contributors:
// the user annotation of each binding whose role annotation is one of roles,
// sorted and without duplicates. Bindings being deleted no longer count.
func Contributors(bindings []metav1.PartialObjectMetadata, roles []string) []string {
	var users []string
	for _, b := range bindings {
		user, role := b.Annotations[AnnotationUser], b.Annotations[AnnotationRole]
		if user == "" || !slices.Contains(roles, role) || b.DeletionTimestamp != nil {
			continue
		}
		users = append(users, user)
	}
	slices.Sort(users)
	return slices.Compact(users)
}

// Users returns the header values that identify the owner and contributors
// of p: the prefix then each name, sorted and without duplicates.
func Users(cfg *Config, p *kubeflowv1.Profile, contributors []string) []string {
	var names []string
	if p.Spec.Owner.Name != "" {
		names = append(names, p.Spec.Owner.Name)
	}
	names = append(names, contributors...)
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, cfg.UserIDPrefix+n)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// HeaderKey is the Istio attribute of the user-id header.
func HeaderKey(header string) string { return "request.headers[" + header + "]" }

// AccessSpec returns the access policy's spec for p: users through the
// gateways, the namespace's own workloads, probes, and the notebook
// controller. It is nil when no rule applies, because an ALLOW policy
// without rules would deny everything.
func AccessSpec(cfg *Config, p *kubeflowv1.Profile, contributors []string) *securityv1beta1.AuthorizationPolicy {
	e := expander{placeholders.Of(p)}
	var rules []*securityv1beta1.Rule
	if users := Users(cfg, p, contributors); len(users) > 0 {
		// From and when in one rule must both match: the header counts only
		// on requests that the gateway sent.
		rules = append(rules, &securityv1beta1.Rule{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: slices.Clone(cfg.GatewayPrincipals)}}},
			When: []*securityv1beta1.Condition{{Key: HeaderKey(cfg.UserIDHeader), Values: users}},
		})
	}
	if cfg.SameNamespace {
		rules = append(rules, &securityv1beta1.Rule{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Namespaces: []string{e.Namespace}}}},
		})
	}
	if len(cfg.ProbePaths) > 0 {
		rules = append(rules, &securityv1beta1.Rule{
			To: []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Methods: []string{"GET", "HEAD"}, Paths: e.all(cfg.ProbePaths)}}},
		})
	}
	if nb := cfg.NotebookController; len(nb.Principals) > 0 {
		r := &securityv1beta1.Rule{From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: slices.Clone(nb.Principals)}}}}
		if len(nb.Paths) > 0 {
			r.To = []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Paths: e.all(nb.Paths)}}}
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil
	}
	return &securityv1beta1.AuthorizationPolicy{Action: securityv1beta1.AuthorizationPolicy_ALLOW, Rules: rules}
}

// PolicySpec returns the spec of a further policy for p.
func PolicySpec(pol Policy, p *kubeflowv1.Profile) *securityv1beta1.AuthorizationPolicy {
	e := expander{placeholders.Of(p)}
	spec := &securityv1beta1.AuthorizationPolicy{Action: securityv1beta1.AuthorizationPolicy_ALLOW}
	if pol.Action == "DENY" {
		spec.Action = securityv1beta1.AuthorizationPolicy_DENY
	}
	if len(pol.Selector) > 0 {
		labels := make(map[string]string, len(pol.Selector))
		for k, v := range pol.Selector {
			labels[k] = e.one(v)
		}
		spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: labels}
	}
	for _, r := range pol.Rules {
		rule := &securityv1beta1.Rule{}
		for _, f := range r.From {
			s := f.Source
			rule.From = append(rule.From, &securityv1beta1.Rule_From{Source: &securityv1beta1.Source{
				Principals: e.all(s.Principals), NotPrincipals: e.all(s.NotPrincipals),
				RequestPrincipals: e.all(s.RequestPrincipals), NotRequestPrincipals: e.all(s.NotRequestPrincipals),
				Namespaces: e.all(s.Namespaces), NotNamespaces: e.all(s.NotNamespaces),
				IpBlocks: e.all(s.IPBlocks), NotIpBlocks: e.all(s.NotIPBlocks),
			}})
		}
		for _, t := range r.To {
			o := t.Operation
			rule.To = append(rule.To, &securityv1beta1.Rule_To{Operation: &securityv1beta1.Operation{
				Hosts: e.all(o.Hosts), NotHosts: e.all(o.NotHosts), Ports: e.all(o.Ports), NotPorts: e.all(o.NotPorts),
				Methods: e.all(o.Methods), NotMethods: e.all(o.NotMethods), Paths: e.all(o.Paths), NotPaths: e.all(o.NotPaths),
			}})
		}
		for _, w := range r.When {
			rule.When = append(rule.When, &securityv1beta1.Condition{Key: e.one(w.Key), Values: e.all(w.Values), NotValues: e.all(w.NotValues)})
		}
		spec.Rules = append(spec.Rules, rule)
	}
	return spec
}

// Build returns the AuthorizationPolicies for p: the access policy (unless
// no rule applies) and the configured further policies.
func Build(cfg *Config, p *kubeflowv1.Profile, contributors []string) []*securityv1ac.AuthorizationPolicyApplyConfiguration {
	ns := plugins.Namespace(p)
	var out []*securityv1ac.AuthorizationPolicyApplyConfiguration
	if spec := AccessSpec(cfg, p, contributors); spec != nil {
		out = append(out, withSpec(securityv1ac.AuthorizationPolicy(cfg.Name, ns), spec))
	}
	for _, pol := range cfg.Policies {
		out = append(out, withSpec(securityv1ac.AuthorizationPolicy(pol.Name, ns), PolicySpec(pol, p)))
	}
	return out
}

// withSpec sets the spec by pointer: the generated WithSpec takes the
// message by value, which copies its internal state.
func withSpec(ac *securityv1ac.AuthorizationPolicyApplyConfiguration, spec *securityv1beta1.AuthorizationPolicy) *securityv1ac.AuthorizationPolicyApplyConfiguration {
	ac.Spec = spec
	return ac
}
