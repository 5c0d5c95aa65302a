package templates

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "templates"

// Config is the templates plugin's configuration. The templates and the
// rules that bound them are the host's; a Profile only names the opt-in
// templates it wants.
type Config struct {
	// Templates are the objects the host offers, each written into the
	// namespace of every Profile it is for.
	Templates []Template `json:"templates,omitempty" profilekit:"hostonly"`
	// DeniedKinds are the kinds no template may make, written Kind for the
	// core group and Kind.group for the others (ResourceQuota,
	// NetworkPolicy.networking.k8s.io). Default DefaultDeniedKinds.
	DeniedKinds []string `json:"deniedKinds,omitempty" profilekit:"hostonly"`
	// DeniedRoles are the names of the roles (ClusterRoles or Roles) that no
	// templated RoleBinding or ClusterRoleBinding may grant. Default
	// DefaultDeniedRoles.
	DeniedRoles []string `json:"deniedRoles,omitempty" profilekit:"hostonly"`
	// RetiredKinds are kinds no template makes any more whose objects are
	// still to be pruned. The host watches and prunes only the kinds the
	// configuration names: when the last template of a kind goes, list its
	// kind here, or its objects stay until their Profiles are deleted.
	RetiredKinds []KindRef `json:"retiredKinds,omitempty" profilekit:"hostonly"`
	// Enable names the opt-in templates the Profile wants.
	Enable []string `json:"enable,omitempty"`
}

// Template is one object the host offers to Profiles.
type Template struct {
	// Name names the template in Profiles' enable lists and in conditions.
	Name string `json:"name"`
	// ProfileSelector, when set, limits the template to the Profiles whose
	// labels it matches.
	ProfileSelector *metav1.LabelSelector `json:"profileSelector,omitempty"`
	// OptIn limits the template to the Profiles that name it in enable.
	OptIn bool `json:"optIn,omitempty"`
	// Object is the Kubernetes object, as a YAML mapping or a string of
	// YAML. Its metadata holds name, labels and annotations only, and its
	// string values may hold placeholders (see the package doc).
	Object Object `json:"object"`
}

// KindRef names a kind by its apiVersion and kind, as objects do.
type KindRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// GroupVersionKind returns the kind r names.
func (r KindRef) GroupVersionKind() (schema.GroupVersionKind, error) {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil || r.APIVersion == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("apiVersion %q: want group/version, or v1 for the core group", r.APIVersion)
	}
	if msgs := validation.IsDNS1035Label(strings.ToLower(r.Kind)); len(msgs) > 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind %q: %s", r.Kind, strings.Join(msgs, "; "))
	}
	return gv.WithKind(r.Kind), nil
}

// Built-in defaults of the deny lists.
var (
	// DefaultDeniedKinds: a namespace is the core plugin's, and quotas and
	// limit ranges are the quotas and limitrange plugins'.
	DefaultDeniedKinds = []string{"Namespace", "ResourceQuota", "LimitRange"}
	// DefaultDeniedRoles are the roles that grant a namespace's tenants
	// (or anyone) administration.
	DefaultDeniedRoles = []string{"cluster-admin", "admin"}
)

// NewConfig returns a Config holding the built-in defaults: no templates,
// and the default deny lists.
func NewConfig() *Config {
	return &Config{DeniedKinds: slices.Clone(DefaultDeniedKinds), DeniedRoles: slices.Clone(DefaultDeniedRoles)}
}

// Validate checks what can be checked without a Profile or a cluster: each
// template's name, selector and object (see Object), the deny lists, the
// retired kinds, and that Enable names only templates there are.
func (c *Config) Validate() error {
	var errs []error
	for i, k := range c.DeniedKinds {
		if schema.ParseGroupKind(k).Kind == "" {
			errs = append(errs, fmt.Errorf("%s: %q: want Kind or Kind.group", field.NewPath("deniedKinds").Index(i), k))
		}
	}
	for i, r := range c.DeniedRoles {
		if r == "" {
			errs = append(errs, fmt.Errorf("%s: empty role name", field.NewPath("deniedRoles").Index(i)))
		}
	}
	for i, r := range c.RetiredKinds {
		if _, err := r.GroupVersionKind(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field.NewPath("retiredKinds").Index(i), err))
		}
	}
	seen := map[string]int{}
	made := map[string]int{}
	for i, t := range c.Templates {
		at := field.NewPath("templates").Index(i)
		if msgs := validation.IsDNS1123Subdomain(t.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: name %q: %s", at, t.Name, strings.Join(msgs, "; ")))
		}
		if prev, dup := seen[t.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: name %q is also used by %s", at, t.Name, field.NewPath("templates").Index(prev)))
		}
		seen[t.Name] = i
		if t.ProfileSelector != nil {
			if _, err := metav1.LabelSelectorAsSelector(t.ProfileSelector); err != nil {
				errs = append(errs, fmt.Errorf("%s: profileSelector: %w", at, err))
			}
		}
		oerrs := t.Object.check(at.Child("object"), c.rules())
		errs = append(errs, oerrs...)
		if len(oerrs) > 0 {
			continue
		}
		// Two templates may share an object only when a placeholder in its
		// name can tell them apart; build refuses the second of a pair
		// that meets for some Profile.
		if name := t.Object.name(); !strings.Contains(name, "{{") {
			key := t.Object.gvk().String() + " " + name
			if prev, dup := made[key]; dup {
				errs = append(errs, fmt.Errorf("%s: %s %s is also made by %s", at, t.Object.gvk().Kind, name, field.NewPath("templates").Index(prev)))
			}
			made[key] = i
		}
	}
	for i, n := range c.Enable {
		if _, ok := seen[n]; !ok {
			errs = append(errs, fmt.Errorf("%s: %q: no such template; the host offers %s", field.NewPath("enable").Index(i), n, c.offered()))
		}
	}
	return errors.Join(errs...)
}

// offered names the opt-in templates, for a message.
func (c *Config) offered() string {
	var names []string
	for _, t := range c.Templates {
		if t.OptIn {
			names = append(names, t.Name)
		}
	}
	if len(names) == 0 {
		return "no opt-in template"
	}
	return strings.Join(names, ", ")
}

// Kinds returns the kinds the plugin writes under c, sorted, each once: the
// kinds of its templates, and its retired kinds. Those are the kinds a
// host watches and prunes for it.
func (c *Config) Kinds() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	add := func(gvk schema.GroupVersionKind) {
		if !slices.Contains(out, gvk) {
			out = append(out, gvk)
		}
	}
	for _, t := range c.Templates {
		add(t.Object.gvk())
	}
	for _, r := range c.RetiredKinds {
		if gvk, err := r.GroupVersionKind(); err == nil {
			add(gvk)
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Version, b.Version))
	})
	return out
}

// rules returns the deny rules of c.
func (c *Config) rules() rules {
	r := rules{roles: c.DeniedRoles}
	for _, k := range c.DeniedKinds {
		r.kinds = append(r.kinds, schema.ParseGroupKind(k))
	}
	return r
}
