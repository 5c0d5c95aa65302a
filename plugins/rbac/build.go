package rbac

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/placeholders"
)

// Objects are the Roles and RoleBindings one Profile gets.
type Objects struct {
	Roles    []*rbacv1ac.RoleApplyConfiguration
	Bindings []*rbacv1ac.RoleBindingApplyConfiguration
}

// List returns the objects as the apply configurations Sync takes.
func (o Objects) List() []runtime.ApplyConfiguration {
	out := make([]runtime.ApplyConfiguration, 0, len(o.Roles)+len(o.Bindings))
	for _, r := range o.Roles {
		out = append(out, r)
	}
	for _, b := range o.Bindings {
		out = append(out, b)
	}
	return out
}

// Build returns the Roles and RoleBindings for p: the host's roles and
// bindings whose profileSelector matches p's labels, then p's extra bindings,
// with placeholders filled in. A placeholder the Profile cannot fill (no
// owner) or a service account name that is invalid once filled in is a
// terminal InvalidSpec error naming the binding and subject.
func Build(cfg *Config, p *kubeflowv1.Profile) (Objects, error) {
	var out Objects
	var errs []error
	for _, r := range cfg.Roles {
		ok, err := selects(r.ProfileSelector, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("role %s: %w", r.Name, err))
			continue
		}
		if ok {
			out.Roles = append(out.Roles, BuildRole(r, p))
		}
	}
	for _, b := range slices.Concat(cfg.Bindings, cfg.ExtraBindings) {
		ok, err := selects(b.ProfileSelector, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("binding %s: %w", b.Name, err))
			continue
		}
		if !ok {
			continue
		}
		rb, err := BuildBinding(b, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out.Bindings = append(out.Bindings, rb)
	}
	if len(errs) > 0 {
		return Objects{}, plugins.Terminal(plugins.ReasonInvalidSpec, errors.Join(errs...))
	}
	return out, nil
}

func selects(sel *metav1.LabelSelector, p *kubeflowv1.Profile) (bool, error) {
	if sel == nil {
		return true, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, fmt.Errorf("profileSelector: %w", err)
	}
	return s.Matches(labels.Set(p.Labels)), nil
}

// BuildRole returns the Role r in p's namespace.
func BuildRole(r Role, p *kubeflowv1.Profile) *rbacv1ac.RoleApplyConfiguration {
	role := rbacv1ac.Role(r.Name, plugins.Namespace(p))
	for _, rule := range r.Rules {
		role.WithRules(rbacv1ac.PolicyRule().
			WithVerbs(rule.Verbs...).
			WithAPIGroups(rule.APIGroups...).
			WithResources(rule.Resources...).
			WithResourceNames(rule.ResourceNames...))
	}
	return role
}

// BuildBinding returns the RoleBinding b in p's namespace.
func BuildBinding(b Binding, p *kubeflowv1.Profile) (*rbacv1ac.RoleBindingApplyConfiguration, error) {
	subjects, err := Subjects(b.Subjects, p)
	if err != nil {
		return nil, fmt.Errorf("binding %s: %w", b.Name, err)
	}
	rb := rbacv1ac.RoleBinding(b.Name, plugins.Namespace(p)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind(b.RoleRef.Kind).WithName(b.RoleRef.Name))
	for _, s := range subjects {
		sac := rbacv1ac.Subject().WithKind(s.Kind).WithName(s.Name)
		if s.APIGroup != "" {
			sac.WithAPIGroup(s.APIGroup)
		}
		if s.Namespace != "" {
			sac.WithNamespace(s.Namespace)
		}
		rb.WithSubjects(sac)
	}
	return rb, nil
}

// Subjects returns subs for p: placeholders filled in, a service account
// without a namespace put in p's namespace, users and groups given the RBAC
// API group (as the API server would), sorted by kind, namespace and name,
// and without duplicates, so that the same input always gives the same list.
func Subjects(subs []Subject, p *kubeflowv1.Profile) ([]rbacv1.Subject, error) {
	out := make([]rbacv1.Subject, 0, len(subs))
	var errs []error
	for i, s := range subs {
		at := field.NewPath("subjects").Index(i)
		name, err := fill(s.Name, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
			continue
		}
		rs := rbacv1.Subject{Kind: s.Kind, Name: name}
		if s.Kind == rbacv1.ServiceAccountKind {
			ns := cmp.Or(s.Namespace, "{{ .Namespace }}")
			if rs.Namespace, err = fill(ns, p); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at, err))
				continue
			}
			if e := serviceAccountErrors(at, rs.Name, rs.Namespace); len(e) > 0 {
				errs = append(errs, e...)
				continue
			}
		} else {
			rs.APIGroup = rbacv1.GroupName
		}
		out = append(out, rs)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(out, func(a, b rbacv1.Subject) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return slices.Compact(out), nil
}

// fill replaces the placeholders in s with p's values.
func fill(s string, p *kubeflowv1.Profile) (string, error) {
	if placeholders.Uses(s, placeholders.Owner) && p.Spec.Owner.Name == "" {
		return "", fmt.Errorf("%q uses {{ .Owner }} but the Profile has no spec.owner", s)
	}
	return placeholders.Expand(s, placeholders.Of(p)), nil
}
