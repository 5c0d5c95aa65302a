package replicate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "replicate"

// The kinds a source may be.
const (
	KindSecret    = "Secret"
	KindConfigMap = "ConfigMap"
)

// OnSourceDeleted says what happens to the copies of a source that is gone.
type OnSourceDeleted string

const (
	// SourceDeletedRetain leaves the copies as they were and reports the
	// missing source on the condition. The default: deleting credentials
	// under running workloads is worse than a stale copy.
	SourceDeletedRetain OnSourceDeleted = "Retain"
	// SourceDeletedDelete deletes the copies of a source that is gone.
	SourceDeletedDelete OnSourceDeleted = "Delete"
)

// Config is the replicate plugin's configuration. Only the host lists
// sources; a Profile can only opt in to sources the host offers.
type Config struct {
	// Sources are the objects the host copies into Profiles' namespaces.
	Sources []Source `json:"sources,omitempty" profilekit:"hostonly"`
	// OnSourceDeleted is the policy of the sources that set none: Retain
	// (default) or Delete.
	OnSourceDeleted OnSourceDeleted `json:"onSourceDeleted,omitempty" profilekit:"hostonly"`
	// Include names, by id, optIn sources the Profile wants. Naming a
	// source the host does not offer is an error.
	Include []string `json:"include,omitempty"`
}

// Source is one Secret or ConfigMap, or the ones a label selector picks in a
// namespace, to copy.
type Source struct {
	// ID names the source in Include, conditions and the copies'
	// annotations. Required, unique.
	ID string `json:"id"`
	// Kind is Secret or ConfigMap.
	Kind string `json:"kind"`
	// Namespace holds the source. Required.
	Namespace string `json:"namespace"`
	// Name picks one object. Exactly one of Name and Selector is set.
	Name string `json:"name,omitempty"`
	// Selector picks every object in Namespace whose labels match; it must
	// not be empty.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// CopyName is the name of a Name source's copy. Default Name.
	CopyName string `json:"copyName,omitempty"`
	// CopyPrefix comes before each Selector source object's name in its copy's.
	CopyPrefix string `json:"copyPrefix,omitempty"`
	// Keys, when set, are the only keys copied, each under As when given.
	// Keys the source lacks are left out of the copy.
	Keys []Key `json:"keys,omitempty"`
	// OptIn offers the source only to Profiles that Include it.
	OptIn bool `json:"optIn,omitempty"`
	// ProfileSelector narrows the source to Profiles whose labels match,
	// opted in or not.
	ProfileSelector *metav1.LabelSelector `json:"profileSelector,omitempty"`
	// OnSourceDeleted overrides the config's policy for this source.
	OnSourceDeleted OnSourceDeleted `json:"onSourceDeleted,omitempty"`
}

// Key is one key to copy, and the key it becomes in the copy.
type Key struct {
	// Key in the source.
	Key string `json:"key"`
	// As is the key in the copy. Default Key.
	As string `json:"as,omitempty"`
}

// NewConfig returns a Config holding the built-in defaults: no sources.
func NewConfig() *Config {
	return &Config{OnSourceDeleted: SourceDeletedRetain}
}

// Validate checks every source and that Include names offered sources.
func (c *Config) Validate() error {
	var errs []error
	if err := c.OnSourceDeleted.validate(); err != nil {
		errs = append(errs, fmt.Errorf("onSourceDeleted: %w", err))
	}
	ids := map[string]bool{}
	copies := map[string]string{}
	for i, s := range c.Sources {
		at := field.NewPath("sources").Index(i)
		if s.ID != "" {
			at = field.NewPath("sources").Key(s.ID)
		}
		if msgs := validation.IsDNS1123Label(s.ID); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s", at.Child("id"), s.ID, strings.Join(msgs, "; ")))
		} else if ids[s.ID] {
			errs = append(errs, fmt.Errorf("%s %q: given twice", at.Child("id"), s.ID))
		}
		ids[s.ID] = true
		errs = append(errs, s.validate(at))
		if s.Name != "" {
			k := s.Kind + "/" + s.copyName()
			if other, ok := copies[k]; ok {
				errs = append(errs, fmt.Errorf("%s: its copy %s %q is also %s's", at, s.Kind, s.copyName(), other))
			}
			copies[k] = at.String()
		}
	}
	for i, id := range c.Include {
		if !ids[id] {
			errs = append(errs, fmt.Errorf("%s %q: the host offers no such source (offered: %s)", field.NewPath("include").Index(i), id, strings.Join(c.ids(), ", ")))
		}
	}
	return errors.Join(errs...)
}

func (c *Config) ids() []string {
	out := make([]string, 0, len(c.Sources))
	for _, s := range c.Sources {
		out = append(out, s.ID)
	}
	slices.Sort(out)
	return out
}

func (p OnSourceDeleted) validate() error {
	switch p {
	case "", SourceDeletedRetain, SourceDeletedDelete:
		return nil
	}
	return fmt.Errorf("%q: want Retain or Delete", string(p))
}

func (s *Source) validate(at *field.Path) error {
	var errs []error
	if s.Kind != KindSecret && s.Kind != KindConfigMap {
		errs = append(errs, fmt.Errorf("%s %q: want Secret or ConfigMap", at.Child("kind"), s.Kind))
	}
	if msgs := validation.IsDNS1123Label(s.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("%s %q: %s", at.Child("namespace"), s.Namespace, strings.Join(msgs, "; ")))
	}
	switch {
	case s.Name == "" && s.Selector == nil:
		errs = append(errs, fmt.Errorf("%s: set name or selector", at))
	case s.Name != "" && s.Selector != nil:
		errs = append(errs, fmt.Errorf("%s: set name or selector, not both", at))
	case s.Name != "":
		if msgs := validation.IsDNS1123Subdomain(s.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s", at.Child("name"), s.Name, strings.Join(msgs, "; ")))
		}
		if s.CopyPrefix != "" {
			errs = append(errs, fmt.Errorf("%s %q: only for a selector source; use copyName", at.Child("copyPrefix"), s.CopyPrefix))
		}
		if msgs := validation.IsDNS1123Subdomain(s.copyName()); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s", at.Child("copyName"), s.copyName(), strings.Join(msgs, "; ")))
		}
		if plugins.IsUpstreamName(s.copyName()) {
			errs = append(errs, fmt.Errorf("%s %q belongs to the upstream profile controller", at.Child("copyName"), s.copyName()))
		}
	default:
		sel, err := metav1.LabelSelectorAsSelector(s.Selector)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at.Child("selector"), err))
		} else if sel.Empty() {
			errs = append(errs, fmt.Errorf("%s: empty, which would copy every %s of namespace %s", at.Child("selector"), s.Kind, s.Namespace))
		}
		if s.CopyName != "" {
			errs = append(errs, fmt.Errorf("%s %q: only for a name source; use copyPrefix", at.Child("copyName"), s.CopyName))
		}
		if msgs := validation.IsDNS1123Subdomain(s.CopyPrefix + "x"); s.CopyPrefix != "" && len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s", at.Child("copyPrefix"), s.CopyPrefix, strings.Join(msgs, "; ")))
		}
	}
	if s.ProfileSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(s.ProfileSelector); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at.Child("profileSelector"), err))
		}
	}
	if err := s.OnSourceDeleted.validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", at.Child("onSourceDeleted"), err))
	}
	targets := map[string]bool{}
	for j, k := range s.Keys {
		for _, f := range []struct{ name, v string }{{"key", k.Key}, {"as", k.as()}} {
			if msgs := validation.IsConfigMapKey(f.v); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s %q: %s", at.Child("keys").Index(j).Child(f.name), f.v, strings.Join(msgs, "; ")))
			}
		}
		if targets[k.as()] {
			errs = append(errs, fmt.Errorf("%s: key %q in the copy is given twice", at.Child("keys").Index(j), k.as()))
		}
		targets[k.as()] = true
	}
	return errors.Join(errs...)
}

func (s *Source) copyName() string {
	if s.CopyName != "" {
		return s.CopyName
	}
	return s.Name
}

func (k Key) as() string {
	if k.As != "" {
		return k.As
	}
	return k.Key
}

// policy returns the source's OnSourceDeleted, or the config's.
func (c *Config) policy(s *Source) OnSourceDeleted {
	if s.OnSourceDeleted != "" {
		return s.OnSourceDeleted
	}
	if c.OnSourceDeleted != "" {
		return c.OnSourceDeleted
	}
	return SourceDeletedRetain
}

// selector returns the source's selector; Validate has checked it parses.
func (s *Source) selector() labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(s.Selector)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// For returns the sources p gets, in the config's order: those its labels
// match that are not optIn or that it includes.
func (c *Config) For(p *kubeflowv1.Profile) []*Source {
	var out []*Source
	for i := range c.Sources {
		s := &c.Sources[i]
		if s.OptIn && !slices.Contains(c.Include, s.ID) {
			continue
		}
		if s.ProfileSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(s.ProfileSelector)
			if err != nil || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}
