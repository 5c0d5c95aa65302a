package notebook

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "notebook"

// Config is the notebook plugin's configuration. Every field is the host's:
// a PodDefault can mount volumes and pick a service account for a tenant's
// pods, so a Profile does not choose them.
type Config struct {
	// PodDefaults are written in every Profile's namespace the plugin serves,
	// each narrowed by its profileSelector.
	PodDefaults []PodDefault `json:"podDefaults,omitempty" profilekit:"hostonly"`
}

// PodDefault is one PodDefault to write: its name, which Profiles get it,
// and its spec, whose fields sit beside name as in the PodDefault's own spec.
type PodDefault struct {
	// Name of the PodDefault.
	Name string `json:"name"`
	// ProfileSelector, when set, limits the PodDefault to the Profiles whose
	// labels it matches.
	ProfileSelector *metav1.LabelSelector `json:"profileSelector,omitempty"`

	PodDefaultSpec `json:",inline"`
}

// NewConfig returns a Config holding the built-in defaults: no PodDefaults.
// What a platform offers its notebooks is its own configuration.
func NewConfig() *Config { return &Config{} }

// Validate checks each PodDefault's name, selectors, labels, annotations,
// and the names in its env, volumes, mounts and tolerations.
func (c *Config) Validate() error {
	var errs []error
	seen := map[string]int{}
	for i, d := range c.PodDefaults {
		at := field.NewPath("podDefaults").Index(i)
		if prev, dup := seen[d.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: name %q is also used by %s", at, d.Name, field.NewPath("podDefaults").Index(prev)))
		}
		seen[d.Name] = i
		errs = append(errs, d.validate(at)...)
	}
	return errors.Join(errs...)
}

func (d PodDefault) validate(at *field.Path) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(at.String()+": "+format, args...)) }
	if msgs := validation.IsDNS1123Subdomain(d.Name); len(msgs) > 0 {
		add("name %q: %s", d.Name, strings.Join(msgs, "; "))
	}
	if plugins.IsUpstreamName(d.Name) {
		add("name %q belongs to the upstream profile controller", d.Name)
	}
	if d.ProfileSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(d.ProfileSelector); err != nil {
			add("profileSelector: %v", err)
		}
	}
	if len(d.Selector.MatchLabels) == 0 && len(d.Selector.MatchExpressions) == 0 {
		add("selector is empty: it would apply to every pod in the namespace")
	} else if _, err := metav1.LabelSelectorAsSelector(&d.Selector); err != nil {
		add("selector: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(d.Labels)) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			add("labels: key %q: %s", k, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(d.Labels[k]); len(msgs) > 0 {
			add("%s: value %q: %s", field.NewPath("labels").Key(k), d.Labels[k], strings.Join(msgs, "; "))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(d.Annotations)) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			add("annotations: key %q: %s", k, strings.Join(msgs, "; "))
		}
	}
	if d.ServiceAccountName != "" {
		if msgs := validation.IsDNS1123Subdomain(d.ServiceAccountName); len(msgs) > 0 {
			add("serviceAccountName %q: %s", d.ServiceAccountName, strings.Join(msgs, "; "))
		}
	}
	for i, e := range d.Env {
		if e.Name == "" {
			add("%s: no name", field.NewPath("env").Index(i))
		}
	}
	volumes := map[string]bool{}
	for i, v := range d.Volumes {
		if msgs := validation.IsDNS1123Label(v.Name); len(msgs) > 0 {
			add("%s: name %q: %s", field.NewPath("volumes").Index(i), v.Name, strings.Join(msgs, "; "))
		}
		if volumes[v.Name] {
			add("%s: name %q is used twice", field.NewPath("volumes").Index(i), v.Name)
		}
		volumes[v.Name] = true
	}
	for i, m := range d.VolumeMounts {
		if m.Name == "" || m.MountPath == "" {
			add("%s: needs a name and a mountPath", field.NewPath("volumeMounts").Index(i))
		}
	}
	for i, t := range d.Tolerations {
		switch t.Operator {
		case "", corev1.TolerationOpEqual:
		case corev1.TolerationOpExists:
			if t.Value != "" {
				add("%s: operator Exists takes no value", field.NewPath("tolerations").Index(i))
			}
		default:
			add("%s: operator %q is neither Equal nor Exists", field.NewPath("tolerations").Index(i), t.Operator)
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			add("%s: unknown effect %q", field.NewPath("tolerations").Index(i), t.Effect)
		}
	}
	return errs
}
