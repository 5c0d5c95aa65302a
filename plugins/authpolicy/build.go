package authpolicy

import (
	"errors"
	"fmt"
	"slices"

	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	securityv1ac "istio.io/client-go/pkg/applyconfiguration/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/access"
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

// Members are the contributors of a Profile by the kind of their binding.
type Members struct {
	// Users are admitted by the user-id header.
	Users []string
	// Groups are admitted by the groups header or claim.
	Groups []string
}

// Contributors returns the users and groups that the RoleBindings make
// contributors: the user annotation of each binding whose role annotation is
// one of roles, sorted and without duplicates. Bindings being deleted no
// longer count. Only a binding's metadata is read, so its subject's kind is
// told by its name, as the access-management service gives it
// (access.ContributorBindingName): a Group's binding makes a group
// contributor, a ServiceAccount's binding none (its access is RBAC's), and
// any other binding a user contributor.
func Contributors(bindings []metav1.PartialObjectMetadata, roles []string) Members {
	var m Members
	for _, b := range bindings {
		user, role := b.Annotations[AnnotationUser], b.Annotations[AnnotationRole]
		// The owner's namespaceAdmin carries the two annotations too; the
		// owner comes from the Profile, by its kind.
		if user == "" || !slices.Contains(roles, role) || b.DeletionTimestamp != nil || plugins.IsUpstreamName(b.Name) {
			continue
		}
		switch b.Name {
		case access.ContributorBindingName(rbacv1.GroupKind, user, role):
			m.Groups = append(m.Groups, user)
		case access.ContributorBindingName(rbacv1.ServiceAccountKind, user, role):
		default:
			m.Users = append(m.Users, user)
		}
	}
	slices.Sort(m.Users)
	slices.Sort(m.Groups)
	return Members{Users: slices.Compact(m.Users), Groups: slices.Compact(m.Groups)}
}

// owner returns p's owner as a user or a group; a ServiceAccount is
// neither, and so is a Profile without an owner.
func owner(p *kubeflowv1.Profile) (user, group string, err error) {
	o := p.Spec.Owner
	switch {
	case o.Name == "" || o.Kind == rbacv1.ServiceAccountKind:
		return "", "", nil
	case o.Kind == rbacv1.UserKind:
		return o.Name, "", nil
	case o.Kind == rbacv1.GroupKind:
		return "", o.Name, nil
	}
	return "", "", plugins.Terminalf(plugins.ReasonInvalidSpec, "spec.owner: kind %q: want %s, %s or %s; the access policy admits no one by it",
		o.Kind, rbacv1.UserKind, rbacv1.GroupKind, rbacv1.ServiceAccountKind)
}

// Users returns the header values that identify p's owner, when a User,
// and the users given: the prefix then each name, sorted and without
// duplicates. A name that Istio cannot match exactly (see access.CheckUser)
// is left out, and the error, a terminal InvalidSpec one, names it; so does
// an owner of an unknown kind.
func Users(cfg *Config, p *kubeflowv1.Profile, users []string) ([]string, error) {
	var errs []error
	o, _, err := owner(p)
	errs = append(errs, err)
	out := make([]string, 0, len(users)+1)
	check := func(who, name string) {
		v := cfg.UserIDPrefix + name
		if err := access.CheckUser(v); err != nil {
			errs = append(errs, plugins.Terminalf(plugins.ReasonInvalidSpec, "%s: %w; left out of the access policy", who, err))
			return
		}
		out = append(out, v)
	}
	if o != "" {
		check("spec.owner", o)
	}
	for _, u := range users {
		check("contributor", u)
	}
	slices.Sort(out)
	return slices.Compact(out), errors.Join(errs...)
}

// groups returns the names of p's owner, when a Group, and of the groups
// given, leaving out those the host's groups cannot match exactly: every
// one when the host configures neither header nor claim.
func groups(cfg *Config, p *kubeflowv1.Profile, names []string) ([]string, error) {
	var errs []error
	var out []string
	check := func(who, name string) {
		err := cfg.Groups.CheckGroup(name)
		if err == nil && !cfg.Groups.Enabled() {
			err = fmt.Errorf("group %q: the host configures neither a groups header nor a groups claim (authpolicy's groups)", name)
		}
		if err != nil {
			errs = append(errs, plugins.Terminalf(plugins.ReasonInvalidSpec, "%s: %w; left out of the access policy", who, err))
			return
		}
		out = append(out, name)
	}
	if _, g, _ := owner(p); g != "" {
		check("spec.owner", g)
	}
	for _, g := range names {
		check("contributor", g)
	}
	return out, errors.Join(errs...)
}

// HeaderKey is the Istio attribute of the user-id header.
func HeaderKey(header string) string { return access.HeaderKey(header) }

// AccessSpec returns the access policy's spec for p: users through the
// gateways by the user-id header, groups through the gateways by the groups
// header or claim, the namespace's own workloads, probes, and the notebook
// controller. It is nil when no rule applies, because an ALLOW policy
// without rules would deny everything. A user or group that cannot be
// matched exactly is left out and named in the error, a terminal
// InvalidSpec one, returned with the spec of the rest; when nothing else
// applies, that spec has no rules and admits no one, rather than leave the
// namespace without an ALLOW policy, which would admit anyone.
func AccessSpec(cfg *Config, p *kubeflowv1.Profile, contributors Members) (*securityv1beta1.AuthorizationPolicy, error) {
	e := expander{placeholders.Of(p)}
	users, userErr := Users(cfg, p, contributors.Users)
	groupNames, groupErr := groups(cfg, p, contributors.Groups)
	err := errors.Join(userErr, groupErr)
	var rules []*securityv1beta1.Rule
	if len(users) > 0 {
		// From and when in one rule must both match: the header counts only
		// on requests that the gateway sent.
		rules = append(rules, &securityv1beta1.Rule{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: slices.Clone(cfg.GatewayPrincipals)}}},
			When: []*securityv1beta1.Condition{{Key: HeaderKey(cfg.UserIDHeader), Values: users}},
		})
	}
	rules = append(rules, cfg.Groups.Rules(cfg.GatewayPrincipals, groupNames)...)
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
	if len(rules) == 0 && err == nil {
		return nil, nil
	}
	return &securityv1beta1.AuthorizationPolicy{Action: securityv1beta1.AuthorizationPolicy_ALLOW, Rules: rules}, err
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
// no rule applies) and the configured further policies, with AccessSpec's
// error for the users and groups it left out.
func Build(cfg *Config, p *kubeflowv1.Profile, contributors Members) ([]*securityv1ac.AuthorizationPolicyApplyConfiguration, error) {
	ns := plugins.Namespace(p)
	var out []*securityv1ac.AuthorizationPolicyApplyConfiguration
	spec, err := AccessSpec(cfg, p, contributors)
	if spec != nil {
		out = append(out, withSpec(securityv1ac.AuthorizationPolicy(cfg.Name, ns), spec))
	}
	for _, pol := range cfg.Policies {
		out = append(out, withSpec(securityv1ac.AuthorizationPolicy(pol.Name, ns), PolicySpec(pol, p)))
	}
	return out, err
}

// withSpec sets the spec by pointer: the generated WithSpec takes the
// message by value, which copies its internal state.
func withSpec(ac *securityv1ac.AuthorizationPolicyApplyConfiguration, spec *securityv1beta1.AuthorizationPolicy) *securityv1ac.AuthorizationPolicyApplyConfiguration {
	ac.Spec = spec
	return ac
}
