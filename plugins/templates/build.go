package templates

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/placeholders"
)

// Plan is what the plugin does for one Profile: the objects it writes, the
// objects of failing templates it leaves as they are, and why those fail.
type Plan struct {
	// Objects are written, in the order of their templates. Every other
	// object of the plugin's for the Profile is pruned, but Held.
	Objects []Rendered
	// Held are the objects of the templates that fail for the Profile:
	// neither written nor pruned until the template renders again.
	Held []Held
	// HoldAll is set when a failing template's object has no name for the
	// Profile (a placeholder of its name has no value, or fills it with
	// one that is not valid): which object it made before is unknown, so
	// nothing at all is pruned.
	HoldAll bool
	// Err joins why each failing template fails, in the order of the
	// templates, each a TerminalError but for a failed look-up of a kind.
	Err error
}

// Rendered is a template's object for one Profile.
type Rendered struct {
	// Template is the template's name.
	Template string
	// Object is the object, in the Profile's namespace.
	Object *unstructured.Unstructured
}

// Held is the object of a failing template that stays as it is.
type Held struct {
	Template string
	GVK      schema.GroupVersionKind
	Name     string
}

// Build returns the plan for p under cfg: the templates whose
// profileSelector matches p's labels, opt-in ones only when p's enable names
// them, each with its placeholders filled in from p, checked, and put into
// p's namespace. mapper, when not nil, tells which kinds the API server
// serves and whether they are namespaced; without it (offline) every kind
// counts as a served namespaced one but the well-known cluster-scoped
// kinds, which Validate refuses.
func Build(cfg *Config, p *kubeflowv1.Profile, mapper meta.RESTMapper) Plan {
	var plan Plan
	var errs []error
	v := placeholders.Of(p)
	made := map[schema.GroupVersionKind]map[string]string{}
	for _, t := range cfg.Templates {
		selected, err := cfg.selects(t, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !selected {
			continue
		}
		u, name, err := cfg.render(t, v, mapper)
		gvk := t.Object.gvk()
		if err != nil {
			errs = append(errs, err)
			if name != "" {
				plan.Held = append(plan.Held, Held{Template: t.Name, GVK: gvk, Name: name})
			} else {
				plan.HoldAll = true
			}
			continue
		}
		if other, dup := made[gvk][name]; dup {
			// The object is the other template's, and written as it says.
			errs = append(errs, plugins.Terminalf(plugins.ReasonInvalidConfig, "template %s: %s %s/%s is also made by template %s", t.Name, gvk.Kind, v.Namespace, name, other))
			continue
		}
		if made[gvk] == nil {
			made[gvk] = map[string]string{}
		}
		made[gvk][name] = t.Name
		plan.Objects = append(plan.Objects, Rendered{Template: t.Name, Object: u})
	}
	plan.Err = errors.Join(errs...)
	return plan
}

// selects reports whether template t is for p: its selector matches p's
// labels, and an opt-in template is named in enable. Naming a template whose
// selector p does not match is an InvalidSpec error.
func (c *Config) selects(t Template, p *kubeflowv1.Profile) (bool, error) {
	named := slices.Contains(c.Enable, t.Name)
	if t.OptIn && !named {
		return false, nil
	}
	if t.ProfileSelector == nil {
		return true, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(t.ProfileSelector)
	if err != nil {
		// Validate refused it when the host loaded its configuration.
		return false, plugins.Terminalf(plugins.ReasonInvalidConfig, "template %s: profileSelector: %v", t.Name, err)
	}
	if sel.Matches(labels.Set(p.Labels)) {
		return true, nil
	}
	if named {
		return false, plugins.Terminalf(plugins.ReasonInvalidSpec, "template %s: enable names it, but it is not offered to this Profile: its labels do not match the template's profileSelector (%s)", t.Name, sel)
	}
	return false, nil
}

// render returns t's object for the Profile of v, and its name. On error,
// the name is that of the object the template makes for the Profile when
// it is known and valid, else "".
func (c *Config) render(t Template, v placeholders.Values, mapper meta.RESTMapper) (*unstructured.Unstructured, string, error) {
	gvk := t.Object.gvk()
	name := placeholders.Expand(t.Object.name(), v)
	if len(placeholders.Missing(t.Object.name(), v)) > 0 || len(nameProblems(gvk.GroupKind(), name)) > 0 {
		name = ""
	}
	where := fmt.Sprintf("template %s: %s %s/%s", t.Name, gvk.Kind, v.Namespace, cmp.Or(name, t.Object.name()))
	if err := missing(t, v); err != nil {
		return nil, name, plugins.Terminal(plugins.ReasonOf(err, ""), fmt.Errorf("%s: %w", where, err))
	}
	obj := expand(map[string]any(t.Object), func(s string) string { return placeholders.Expand(s, v) }).(map[string]any)
	md := Object(obj).metadata()
	md["namespace"] = v.Namespace
	var problems []error
	if l, ok := md["labels"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(l)) {
			val, _ := l[k].(string)
			if msgs := validation.IsValidLabelValue(val); len(msgs) > 0 {
				problems = append(problems, fmt.Errorf("label %s: value %q: %s", k, val, strings.Join(msgs, "; ")))
			}
		}
	}
	if err := c.rules().refuse(gvk, obj, false); err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return nil, name, plugins.Terminal(plugins.ReasonInvalidConfig, fmt.Errorf("%s: %w", where, errors.Join(problems...)))
	}
	if err := served(mapper, gvk); err != nil {
		if plugins.IsTerminal(err) {
			return nil, name, plugins.Terminal(plugins.ReasonInvalidConfig, fmt.Errorf("%s: %w", where, err))
		}
		return nil, name, fmt.Errorf("%s: %w", where, err)
	}
	return &unstructured.Unstructured{Object: obj}, name, nil
}

// missing returns an error naming the placeholders of t that the Profile
// has no value for: InvalidLabel for a label it does not carry,
// InvalidSpec for an owner it does not have.
func missing(t Template, v placeholders.Values) error {
	var lines []string
	reason := plugins.ReasonInvalidSpec
	walkStrings(map[string]any(t.Object), field.NewPath("object"), func(p *field.Path, s string) {
		for _, m := range placeholders.Missing(s, v) {
			if strings.Contains(m, placeholders.Label) {
				reason = plugins.ReasonInvalidLabel
				lines = append(lines, fmt.Sprintf("the Profile has no such label, which %s at %s needs", m, p))
			} else {
				lines = append(lines, fmt.Sprintf("the Profile has no owner, which %s at %s needs", m, p))
			}
		}
	})
	if len(lines) == 0 {
		return nil
	}
	return plugins.Terminal(reason, errors.New(strings.Join(lines, "; ")))
}

// served checks that the API server serves gvk, in namespaces. It is a
// terminal error when it does not, a transient one when the look-up failed,
// and nil without a mapper.
func served(mapper meta.RESTMapper, gvk schema.GroupVersionKind) error {
	if mapper == nil {
		return nil
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		return plugins.Terminalf(plugins.ReasonInvalidConfig, "the cluster does not serve %s %s: install its CRD (a host watches the kinds it finds served when it starts)", gvk.GroupVersion(), gvk.Kind)
	case err != nil:
		return fmt.Errorf("look up %s %s: %w", gvk.GroupVersion(), gvk.Kind, err)
	case m.Scope.Name() != meta.RESTScopeNameNamespace:
		return plugins.Terminalf(plugins.ReasonInvalidConfig, "kind %s is cluster-scoped: templates make objects in Profiles' namespaces only", kindName(gvk.GroupKind()))
	}
	return nil
}
