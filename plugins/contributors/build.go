package contributors

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1ac "istio.io/client-go/pkg/applyconfiguration/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/internal/access"
)

// Objects are the RoleBindings and AuthorizationPolicies one Profile's
// contributors get, each sorted by name.
type Objects struct {
	Bindings []*rbacv1ac.RoleBindingApplyConfiguration
	Policies []*securityv1ac.AuthorizationPolicyApplyConfiguration
}

// List returns the objects as the apply configurations Sync takes.
func (o Objects) List() []runtime.ApplyConfiguration {
	out := make([]runtime.ApplyConfiguration, 0, len(o.Bindings)+len(o.Policies))
	for _, b := range o.Bindings {
		out = append(out, b)
	}
	for _, ap := range o.Policies {
		out = append(out, apply.Encoded(ap))
	}
	return out
}

// entry is one Contributor as Build judges it.
type entry struct {
	Contributor
	at   string // where the Profile's author finds it
	name string // its binding's name
	// problems refuse the entry; rbacOnly, when set, says why it gets its
	// RoleBinding and no AuthorizationPolicy although it is valid.
	problems []string
	rbacOnly string
}

// Build returns the objects of every valid entry of cfg.Contributors for
// p: a RoleBinding in KFAM's shape and, for users and groups, an
// AuthorizationPolicy of the same name. An entry the host's limits refuse,
// or that is invalid, gets nothing, and is one line of the terminal
// InvalidSpec error returned beside the objects of the others; so is a
// Group entry while the host configures no groups header or claim, which
// gets its RoleBinding alone.
func Build(cfg *Config, p *kubeflowv1.Profile) (Objects, error) {
	entries := judge(cfg, p)
	var out Objects
	var errs []error
	for _, e := range entries {
		if len(e.problems) > 0 {
			errs = append(errs, fmt.Errorf("%s: %s", e.describe(), strings.Join(e.problems, "; ")))
			continue
		}
		out.Bindings = append(out.Bindings, buildBinding(p, e))
		if e.rbacOnly != "" {
			errs = append(errs, fmt.Errorf("%s: %s", e.describe(), e.rbacOnly))
			continue
		}
		if ap := buildPolicy(cfg, p, e); ap != nil {
			out.Policies = append(out.Policies, ap)
		}
	}
	byName := func(a, b string) int { return cmp.Compare(a, b) }
	slices.SortFunc(out.Bindings, func(a, b *rbacv1ac.RoleBindingApplyConfiguration) int { return byName(*a.Name, *b.Name) })
	slices.SortFunc(out.Policies, func(a, b *securityv1ac.AuthorizationPolicyApplyConfiguration) int { return byName(*a.Name, *b.Name) })
	if len(errs) > 0 {
		return out, plugins.Terminal(plugins.ReasonInvalidSpec, errors.Join(errs...))
	}
	return out, nil
}

// judge checks every entry alone, then the entries whose binding names
// meet.
func judge(cfg *Config, p *kubeflowv1.Profile) []*entry {
	path := fieldpath.NewPath("contributors")
	for i, pl := range p.Spec.Plugins {
		if pl.Kind == Kind {
			path = fieldpath.NewPath(plugins.EntryPath(i, Kind) + ".spec").Child("contributors")
			break
		}
	}
	entries := make([]*entry, len(cfg.Contributors))
	byName := map[string][]*entry{}
	for i, c := range cfg.Contributors {
		e := &entry{Contributor: c, at: path.Index(i).String()}
		entries[i] = e
		if i >= cfg.MaxContributors {
			e.problems = []string{fmt.Sprintf("the host allows at most %d contributors", cfg.MaxContributors)}
			continue
		}
		e.problems = check(cfg, c)
		if len(e.problems) > 0 {
			continue
		}
		e.name = BindingName(c.Kind, c.Name, c.Role)
		if err := plugins.CheckObjectName(e.name); err != nil {
			e.problems = append(e.problems, "binding "+err.Error())
			continue
		}
		if c.Kind == rbacv1.GroupKind && !cfg.Groups.Enabled() {
			e.rbacOnly = "granted in RBAC only: the host configures no groups header or claim, so the mesh cannot tell a group's members, and requests through the gateway are not admitted"
		}
		byName[e.name] = append(byName[e.name], e)
	}
	for name, same := range byName {
		first := same[0]
		if !slices.ContainsFunc(same, func(e *entry) bool { return e.subject(p) != first.subject(p) }) {
			for _, e := range same[1:] {
				e.problems = []string{"the same as " + first.at}
			}
			continue
		}
		for _, e := range same {
			var others []string
			for _, o := range same {
				if o != e {
					others = append(others, o.at)
				}
			}
			e.problems = []string{fmt.Sprintf("its binding name %s is also that of %s: the access-management service's names cannot tell them apart, so none of them is granted", name, strings.Join(others, ", "))}
		}
	}
	return entries
}

// check returns why c on its own may not be granted.
func check(cfg *Config, c Contributor) []string {
	var problems []string
	switch {
	case !slices.Contains([]string{rbacv1.UserKind, rbacv1.GroupKind, rbacv1.ServiceAccountKind}, c.Kind):
		problems = append(problems, fmt.Sprintf("kind %q is not User, Group or ServiceAccount", c.Kind))
	case !slices.Contains(cfg.Kinds, c.Kind):
		problems = append(problems, fmt.Sprintf("kind %s is not among the kinds the host allows (%s)", c.Kind, strings.Join(cfg.Kinds, ", ")))
	}
	switch {
	case ClusterRole(c.Role) == "":
		problems = append(problems, fmt.Sprintf("role %q is not admin, edit or view", c.Role))
	case !slices.Contains(cfg.Roles, c.Role):
		problems = append(problems, fmt.Sprintf("role %s is not among the roles the host allows (%s)", c.Role, strings.Join(cfg.Roles, ", ")))
	}
	if c.Namespace != "" && c.Kind != rbacv1.ServiceAccountKind {
		problems = append(problems, "only a ServiceAccount has a namespace")
	}
	switch c.Kind {
	case rbacv1.UserKind:
		problems = append(problems, checkUser(cfg, c.Name)...)
	case rbacv1.GroupKind:
		if err := cfg.Groups.CheckGroup(c.Name); err != nil {
			problems = append(problems, err.Error())
		}
	case rbacv1.ServiceAccountKind:
		if msgs := validation.IsDNS1123Subdomain(c.Name); len(msgs) > 0 {
			problems = append(problems, fmt.Sprintf("service account name %q: %s", c.Name, strings.Join(msgs, "; ")))
		}
		if c.Namespace != "" {
			if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
				problems = append(problems, fmt.Sprintf("namespace %q: %s", c.Namespace, strings.Join(msgs, "; ")))
			}
		}
	}
	return problems
}

// checkUser returns why the user-id header could not carry exactly name,
// and whether the host's domains allow it.
func checkUser(cfg *Config, name string) []string {
	if strings.TrimSpace(name) != name {
		return []string{fmt.Sprintf("user %q: white space at either end, which no request header carries", name)}
	}
	err := access.CheckUser(name)
	if err == nil {
		err = access.CheckUser(cfg.UserIDPrefix + name)
	}
	if err != nil {
		return []string{err.Error()}
	}
	if !allowedUser(cfg.UserDomains, name) {
		return []string{fmt.Sprintf("user %q matches none of the host's user domains (%s)", name, strings.Join(cfg.UserDomains, ", "))}
	}
	return nil
}

// describe names the entry for its author: where it is, who, which role.
func (e *entry) describe() string {
	who := fmt.Sprintf("%s %q", e.Kind, e.Name)
	if e.Namespace != "" {
		who += fmt.Sprintf(" in namespace %q", e.Namespace)
	}
	return fmt.Sprintf("%s (%s, role %q)", e.at, who, e.Role)
}

// subject is the entry's RoleBinding subject in p's namespace.
func (e *entry) subject(p *kubeflowv1.Profile) rbacv1.Subject {
	if e.Kind == rbacv1.ServiceAccountKind {
		return rbacv1.Subject{Kind: e.Kind, Name: e.Name, Namespace: cmp.Or(e.Namespace, plugins.Namespace(p))}
	}
	return rbacv1.Subject{Kind: e.Kind, APIGroup: rbacv1.GroupName, Name: e.Name}
}

// annotations are KFAM's, on every entry's objects: KFAM lists a
// contributor by them and reads the kind from the binding's subject, so the
// dashboard shows users, groups and service accounts alike. The authpolicy
// plugin tells a group's or a service account's binding by its name (see
// access.ContributorBindingName) and never takes its user annotation for a
// user-id header value.
func (e *entry) annotations() map[string]string {
	return map[string]string{core.AnnotationUser: e.Name, core.AnnotationRole: e.Role}
}

func buildBinding(p *kubeflowv1.Profile, e *entry) *rbacv1ac.RoleBindingApplyConfiguration {
	s := e.subject(p)
	subject := rbacv1ac.Subject().WithKind(s.Kind).WithName(s.Name)
	if s.APIGroup != "" {
		subject.WithAPIGroup(s.APIGroup)
	}
	if s.Namespace != "" {
		subject.WithNamespace(s.Namespace)
	}
	return rbacv1ac.RoleBinding(e.name, plugins.Namespace(p)).
		WithAnnotations(e.annotations()).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(ClusterRole(e.Role))).
		WithSubjects(subject)
}

// buildPolicy returns the entry's AuthorizationPolicy: for a user, KFAM's
// one rule (the user-id header from the gateway or the pipelines UI); for
// a group, the rules of access.Groups from the same callers; for a service
// account, which reaches the mesh with its own identity, none.
func buildPolicy(cfg *Config, p *kubeflowv1.Profile, e *entry) *securityv1ac.AuthorizationPolicyApplyConfiguration {
	var rules []*securityv1beta1.Rule
	switch e.Kind {
	case rbacv1.UserKind:
		rules = []*securityv1beta1.Rule{{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: cfg.Principals.List()}}},
			When: []*securityv1beta1.Condition{{Key: access.HeaderKey(cfg.UserIDHeader), Values: []string{cfg.UserIDPrefix + e.Name}}},
		}}
	case rbacv1.GroupKind:
		rules = cfg.Groups.Rules(cfg.Principals.List(), []string{e.Name})
	}
	if len(rules) == 0 {
		return nil
	}
	ap := securityv1ac.AuthorizationPolicy(e.name, plugins.Namespace(p)).WithAnnotations(e.annotations())
	// The generated WithSpec copies the message by value; set the pointer.
	ap.Spec = &securityv1beta1.AuthorizationPolicy{Rules: rules}
	return ap
}
