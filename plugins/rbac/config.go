package rbac

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/placeholders"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "rbac"

// Config is the rbac plugin's configuration. A Profile may set ExtraBindings;
// the other fields are the host's.
type Config struct {
	// Bindings are given to every Profile the plugin serves, each narrowed by
	// its profileSelector.
	Bindings []Binding `json:"bindings,omitempty" profilekit:"hostonly"`
	// Roles are namespaced Roles written next to the bindings, for rules that
	// no ClusterRole holds.
	Roles []Role `json:"roles,omitempty" profilekit:"hostonly"`
	// AllowedRoles are the only roles ExtraBindings may refer to. Empty means
	// a Profile cannot add bindings: the plugin writes with its own rights,
	// so a Profile must not pick the role.
	AllowedRoles []RoleRef `json:"allowedRoles,omitempty" profilekit:"hostonly"`
	// ExtraBindings are the Profile's own bindings, each to one of
	// AllowedRoles. Host defaults for it are replaced, not merged, by a
	// Profile's list.
	ExtraBindings []Binding `json:"extraBindings,omitempty"`
}

// Binding is one RoleBinding in the Profile's namespace.
type Binding struct {
	// Name of the RoleBinding.
	Name string `json:"name"`
	// RoleRef is the role granted. Kubernetes does not let a binding change
	// its role; the plugin replaces the binding instead.
	RoleRef RoleRef `json:"roleRef"`
	// Subjects are who gets the role; their names and namespaces may hold
	// the placeholders {{ .Namespace }} and {{ .Owner }}.
	Subjects []Subject `json:"subjects"`
	// ProfileSelector, when set, limits the binding to the Profiles whose
	// labels it matches.
	ProfileSelector *metav1.LabelSelector `json:"profileSelector,omitempty"`
}

// RoleRef names a ClusterRole, or a Role in the Profile's namespace.
type RoleRef struct {
	// Kind is ClusterRole or Role.
	Kind string `json:"kind"`
	// Name of the role.
	Name string `json:"name"`
}

// Subject is a user, group or service account.
type Subject struct {
	// Kind is User, Group or ServiceAccount.
	Kind string `json:"kind"`
	// Name of the subject.
	Name string `json:"name"`
	// Namespace of a ServiceAccount; default {{ .Namespace }}. Other kinds have none.
	Namespace string `json:"namespace,omitempty"`
}

// Role is one namespaced Role in the Profile's namespace.
type Role struct {
	// Name of the Role.
	Name string `json:"name"`
	// Rules of the Role.
	Rules []rbacv1.PolicyRule `json:"rules"`
	// ProfileSelector, when set, limits the Role to the Profiles whose labels
	// it matches.
	ProfileSelector *metav1.LabelSelector `json:"profileSelector,omitempty"`
}

// NewConfig returns a Config holding the built-in defaults: no bindings, no
// roles, and no roles a Profile may bind. Every organisation's groups and
// roles are its own configuration.
func NewConfig() *Config { return &Config{} }

// Validate checks names, role references, subjects, placeholders and
// selectors, and that every extra binding refers to an allowed role.
func (c *Config) Validate() error {
	var errs []error
	names := map[string]*field.Path{}
	checkBindings := func(path *field.Path, bs []Binding) {
		for i, b := range bs {
			at := path.Index(i)
			if prev, dup := names[b.Name]; dup {
				errs = append(errs, fmt.Errorf("%s: name %q is also used by %s", at, b.Name, prev))
			}
			names[b.Name] = at
			errs = append(errs, b.validate(at)...)
		}
	}
	checkBindings(field.NewPath("bindings"), c.Bindings)
	checkBindings(field.NewPath("extraBindings"), c.ExtraBindings)
	for i, b := range c.ExtraBindings {
		if !slices.Contains(c.AllowedRoles, b.RoleRef) {
			errs = append(errs, fmt.Errorf("%s: %s %q is not among the allowed roles", field.NewPath("extraBindings").Index(i), b.RoleRef.Kind, b.RoleRef.Name))
		}
	}
	for i, r := range c.AllowedRoles {
		errs = append(errs, r.validate(field.NewPath("allowedRoles").Index(i))...)
	}
	roles := map[string]bool{}
	for i, r := range c.Roles {
		at := field.NewPath("roles").Index(i)
		if roles[r.Name] {
			errs = append(errs, fmt.Errorf("%s: name %q is used twice", at, r.Name))
		}
		roles[r.Name] = true
		errs = append(errs, r.validate(at)...)
	}
	return errors.Join(errs...)
}

func (b Binding) validate(at *field.Path) []error {
	errs := validName(at, b.Name)
	errs = append(errs, b.RoleRef.validate(at.Child("roleRef"))...)
	if len(b.Subjects) == 0 {
		errs = append(errs, fmt.Errorf("%s: no subjects", at))
	}
	for i, s := range b.Subjects {
		errs = append(errs, s.validate(at.Child("subjects").Index(i))...)
	}
	if err := validSelector(b.ProfileSelector); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", at.Child("profileSelector"), err))
	}
	return errs
}

func (r RoleRef) validate(at *field.Path) []error {
	var errs []error
	if r.Kind != "ClusterRole" && r.Kind != "Role" {
		errs = append(errs, fmt.Errorf("%s: kind %q is neither ClusterRole nor Role", at, r.Kind))
	}
	if r.Name == "" {
		errs = append(errs, fmt.Errorf("%s: no name", at))
	}
	return errs
}

func (s Subject) validate(at *field.Path) []error {
	var errs []error
	switch s.Kind {
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.Namespace != "" {
			errs = append(errs, fmt.Errorf("%s: a %s has no namespace", at, s.Kind))
		}
	case rbacv1.ServiceAccountKind:
	default:
		errs = append(errs, fmt.Errorf("%s: kind %q is not User, Group or ServiceAccount", at, s.Kind))
	}
	if s.Name == "" {
		errs = append(errs, fmt.Errorf("%s: no name", at))
	}
	for _, v := range []string{s.Name, s.Namespace} {
		if err := checkPlaceholders(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
		}
	}
	if len(errs) == 0 && s.Kind == rbacv1.ServiceAccountKind {
		// Literal values are checked now; placeholders once they are filled in.
		errs = append(errs, serviceAccountErrors(at, s.Name, s.Namespace)...)
	}
	return errs
}

// serviceAccountErrors checks a service account's name and namespace, except
// parts that still hold a placeholder.
func serviceAccountErrors(at *field.Path, name, namespace string) []error {
	var errs []error
	if !strings.Contains(name, "{") {
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: service account name %q: %s", at, name, strings.Join(msgs, "; ")))
		}
	}
	if namespace != "" && !strings.Contains(namespace, "{") {
		if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: namespace %q: %s", at, namespace, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

func (r Role) validate(at *field.Path) []error {
	errs := validName(at, r.Name)
	if len(r.Rules) == 0 {
		errs = append(errs, fmt.Errorf("%s: no rules", at))
	}
	for i, rule := range r.Rules {
		rat := at.Child("rules").Index(i)
		if len(rule.Verbs) == 0 {
			errs = append(errs, fmt.Errorf("%s: no verbs", rat))
		}
		if len(rule.NonResourceURLs) > 0 {
			errs = append(errs, fmt.Errorf("%s: a namespaced Role cannot hold nonResourceURLs", rat))
		}
		if len(rule.APIGroups) == 0 {
			errs = append(errs, fmt.Errorf("%s: no apiGroups (\"\" is the core group)", rat))
		}
		if len(rule.Resources) == 0 {
			errs = append(errs, fmt.Errorf("%s: no resources", rat))
		}
	}
	if err := validSelector(r.ProfileSelector); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", at.Child("profileSelector"), err))
	}
	return errs
}

func validName(at *field.Path, name string) []error {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return []error{fmt.Errorf("%s: name %q: %s", at, name, strings.Join(msgs, "; "))}
	}
	if plugins.IsUpstreamName(name) {
		return []error{fmt.Errorf("%s: name %q belongs to the upstream profile controller", at, name)}
	}
	return nil
}

func validSelector(s *metav1.LabelSelector) error {
	if s == nil {
		return nil
	}
	_, err := metav1.LabelSelectorAsSelector(s)
	return err
}

// checkPlaceholders fails on anything in braces but {{ .Namespace }} and
// {{ .Owner }}.
func checkPlaceholders(s string) error {
	return placeholders.Check(s, placeholders.Namespace, placeholders.Owner)
}
