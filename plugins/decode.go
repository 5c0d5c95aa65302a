package plugins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	sigsjson "sigs.k8s.io/json"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// HostOnlyTag marks a config field that only the host may set, never a
// Profile: `profilekit:"hostonly"` on a top-level field of a config struct.
// Caps, label prefixes and retention are typical.
const HostOnlyTag = "hostonly"

// Validator is implemented by configs that check themselves after decoding.
type Validator interface {
	Validate() error
}

// Entry returns the spec.plugins entry of the given kind, or nil. Two entries
// of one kind are an error: which one counts would be a guess.
func Entry(p *kubeflowv1.Profile, kind string) (*kubeflowv1.Plugin, error) {
	var found *kubeflowv1.Plugin
	for i := range p.Spec.Plugins {
		if p.Spec.Plugins[i].Kind != kind {
			continue
		}
		if found != nil {
			return nil, Terminalf(ReasonInvalidSpec, "plugin %s: spec.plugins lists kind %q more than once", kind, kind)
		}
		found = &p.Spec.Plugins[i]
	}
	return found, nil
}

// Listed reports whether the Profile lists plugin kind in spec.plugins.
func Listed(p *kubeflowv1.Profile, kind string) bool {
	return slices.ContainsFunc(p.Spec.Plugins, func(pl kubeflowv1.Plugin) bool { return pl.Kind == kind })
}

// DecodeHostDefaults decodes a host's defaults (JSON) over the definition's
// built-in defaults and validates the result. Errors name the plugin kind and
// the field; they are InvalidConfig terminal errors.
func (d Definition) DecodeHostDefaults(defaults []byte) (any, error) {
	cfg, err := d.newConfig(defaults)
	if err != nil {
		return nil, Terminal(ReasonInvalidConfig, err)
	}
	if err := validate(cfg); err != nil {
		return nil, Terminal(ReasonInvalidConfig, fmt.Errorf("plugin %s: host defaults: %w", d.Kind(), err))
	}
	return cfg, nil
}

// Decode returns the config for one Profile: the built-in defaults, then the
// host's defaults (JSON, may be empty), then the Profile's own spec.plugins
// entry for this kind, strictly decoded (an unknown, duplicate or mistyped
// field is an error, and so is a host-only field), then validated. Every
// error is a terminal InvalidSpec (or InvalidConfig for the host's part) that
// names the plugin kind and the field.
func (d Definition) Decode(defaults []byte, p *kubeflowv1.Profile) (any, error) {
	cfg, err := d.newConfig(defaults)
	if err != nil {
		return nil, Terminal(ReasonInvalidConfig, err)
	}
	entry, err := Entry(p, d.Kind())
	if err != nil {
		return nil, err
	}
	if entry != nil && entry.Spec != nil && len(bytes.TrimSpace(entry.Spec.Raw)) > 0 && string(bytes.TrimSpace(entry.Spec.Raw)) != "null" {
		if cfg == nil {
			return nil, Terminalf(ReasonInvalidSpec, "plugin %s: takes no spec", d.Kind())
		}
		if err := rejectHostOnly(cfg, entry.Spec.Raw); err != nil {
			return nil, Terminal(ReasonInvalidSpec, fmt.Errorf("plugin %s: spec: %w", d.Kind(), err))
		}
		if err := strictInto(cfg, entry.Spec.Raw); err != nil {
			return nil, Terminal(ReasonInvalidSpec, fmt.Errorf("plugin %s: spec: %w", d.Kind(), err))
		}
	}
	if err := validate(cfg); err != nil {
		return nil, Terminal(ReasonInvalidSpec, fmt.Errorf("plugin %s: %w", d.Kind(), err))
	}
	return cfg, nil
}

func (d Definition) newConfig(defaults []byte) (any, error) {
	if d.NewConfig == nil {
		if len(bytes.TrimSpace(defaults)) > 0 && string(bytes.TrimSpace(defaults)) != "null" {
			return nil, fmt.Errorf("plugin %s: takes no config", d.Kind())
		}
		return nil, nil
	}
	cfg := d.NewConfig()
	if len(bytes.TrimSpace(defaults)) == 0 {
		return cfg, nil
	}
	if err := strictInto(cfg, defaults); err != nil {
		return nil, fmt.Errorf("plugin %s: host defaults: %w", d.Kind(), err)
	}
	return cfg, nil
}

func validate(cfg any) error {
	if v, ok := cfg.(Validator); ok {
		return v.Validate()
	}
	return nil
}

// strictInto decodes data over the values already in v. Maps merge key by
// key; lists and scalars are replaced.
func strictInto(v any, data []byte) error {
	strict, err := sigsjson.UnmarshalStrict(data, v)
	if err != nil {
		return describeJSONError(err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		slices.Sort(msgs)
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

func describeJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("field %q: cannot use %s as %s", te.Field, te.Value, te.Type)
	}
	return err
}

// rejectHostOnly fails when data sets a top-level field that cfg tags as host-only.
func rejectHostOnly(cfg any, data []byte) error {
	t := reflect.TypeOf(cfg)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return describeJSONError(err)
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !slices.Contains(strings.Split(f.Tag.Get("profilekit"), ","), HostOnlyTag) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if _, ok := top[name]; ok {
			return fmt.Errorf("field %q is set by the host only", name)
		}
	}
	return nil
}
