package plugins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// hostOnlyTag marks a config field that only the host may set, never a
// Profile: `profilekit:"hostonly"` on a top-level field of a config struct
// (see Definition.NewConfig). Caps, label prefixes and retention are
// typical.
const hostOnlyTag = "hostonly"

// validator is implemented by configs that check themselves after decoding
// (see Definition.NewConfig).
type validator interface {
	Validate() error
}

// entryIndex returns the index of the spec.plugins entry of kind, or -1.
func entryIndex(p *kubeflowv1.Profile, kind string) (int, error) {
	found := -1
	for i := range p.Spec.Plugins {
		if p.Spec.Plugins[i].Kind != kind {
			continue
		}
		if found >= 0 {
			return -1, Terminalf(ReasonInvalidSpec, "%s: kind %q is listed more than once (also at spec.plugins[%d])", EntryPath(i, kind), kind, found)
		}
		found = i
	}
	return found, nil
}

// EntryPath names a spec.plugins entry the way a Profile's author finds it:
// spec.plugins[0] (quotas).
func EntryPath(i int, kind string) string {
	return field.NewPath("spec", "plugins").Index(i).String() + " (" + kind + ")"
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
// names the entry as the Profile's author sees it (spec.plugins[0] (quotas).spec)
// and the field; each problem is one line of the error.
func (d Definition) Decode(defaults []byte, p *kubeflowv1.Profile) (any, error) {
	cfg, err := d.newConfig(defaults)
	if err != nil {
		return nil, Terminal(ReasonInvalidConfig, err)
	}
	i, err := entryIndex(p, d.Kind())
	if err != nil {
		return nil, err
	}
	// Problems of the merged config are the Profile's when it has a spec:
	// the host's defaults alone were validated when the host started.
	at := "plugin " + d.Kind()
	if i >= 0 {
		at = EntryPath(i, d.Kind()) + ".spec"
	}
	if i >= 0 && p.Spec.Plugins[i].Spec != nil {
		raw := bytes.TrimSpace(p.Spec.Plugins[i].Spec.Raw)
		if len(raw) > 0 && string(raw) != "null" {
			if cfg == nil {
				return nil, Terminalf(ReasonInvalidSpec, "%s: plugin %s takes no spec", at, d.Kind())
			}
			if err := decodeSpec(cfg, raw); err != nil {
				return nil, Terminal(ReasonInvalidSpec, prefixed(at, err))
			}
		}
	}
	if err := validate(cfg); err != nil {
		return nil, Terminal(ReasonInvalidSpec, prefixed(at, err))
	}
	return cfg, nil
}

// decodeSpec strictly decodes a Profile's spec over cfg, refusing host-only
// fields and anything that is not a JSON object.
func decodeSpec(cfg any, raw []byte) error {
	if what := jsonKind(raw); what != "an object" {
		return fmt.Errorf("must be an object, got %s", what)
	}
	if err := rejectHostOnly(cfg, raw); err != nil {
		return err
	}
	return strictInto(cfg, raw)
}

// jsonKind names the kind of JSON value data holds, by its first byte.
func jsonKind(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "nothing"
	}
	switch c := data[0]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return "something that is not JSON"
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
		return nil, prefixed(fmt.Sprintf("plugin %s: host defaults", d.Kind()), err)
	}
	return cfg, nil
}

func validate(cfg any) error {
	if v, ok := cfg.(validator); ok {
		return v.Validate()
	}
	return nil
}

// strictInto decodes data over the values already in v. Maps merge key by
// key; lists and scalars are replaced. Each unknown or duplicate field is one
// line of the error, in order.
func strictInto(v any, data []byte) error {
	strict, err := sigsjson.UnmarshalStrict(data, v)
	if err != nil {
		return describeJSONError(v, data, err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		slices.Sort(msgs)
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			errs[i] = errors.New(m)
		}
		return errors.Join(errs...)
	}
	return nil
}

// describeJSONError says what is wrong with data, which failed to decode into
// v, in terms of its fields: a value whose type is wrong, or that its type
// refuses (a quantity that does not parse), is named by its path.
func describeJSONError(v any, data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if strings.Contains(se.Error(), "exceeded max depth") {
			return errors.New("nested too deeply")
		}
		return fmt.Errorf("not valid JSON at byte %d: %v", se.Offset, se)
	}
	// The decoder's own field names no list index (apps.port, not
	// apps[2].port); the path found again does.
	if path, ferr := locate(reflect.TypeOf(v), data, nil); path != nil {
		return fmt.Errorf("field %q: %w", path, ferr)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("field %q: cannot use %s as %s", te.Field, te.Value, te.Type)
	}
	return err
}

// maxShownValue bounds how much of a refused value an error repeats.
const maxShownValue = 64

// locate finds the first field of data that does not decode into a value of
// type t and returns its path (hard[cpu], apps[0].port) and why; nil when
// every field decodes. It runs only after decoding failed, so its cost does
// not matter.
func locate(t reflect.Type, data []byte, path *field.Path) (*field.Path, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	ptr := reflect.PointerTo(t)
	custom := ptr.Implements(reflect.TypeFor[json.Unmarshaler]())
	switch {
	case !custom && t.Kind() == reflect.Struct:
		var fields map[string]json.RawMessage
		if json.Unmarshal(data, &fields) != nil {
			return decodeOne(t, data, path)
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if raw, ok := fields[name]; ok {
				if p, err := locate(f.Type, raw, path.Child(name)); p != nil {
					return p, err
				}
			}
		}
	case !custom && t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		var entries map[string]json.RawMessage
		if json.Unmarshal(data, &entries) != nil {
			return decodeOne(t, data, path)
		}
		for _, k := range slices.Sorted(maps.Keys(entries)) {
			if p, err := locate(t.Elem(), entries[k], path.Key(k)); p != nil {
				return p, err
			}
		}
	case !custom && t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return decodeOne(t, data, path)
		}
		for i, raw := range items {
			if p, err := locate(t.Elem(), raw, path.Index(i)); p != nil {
				return p, err
			}
		}
	default:
		return decodeOne(t, data, path)
	}
	return nil, nil
}

// decodeOne decodes one value and returns path and the problem when it fails.
func decodeOne(t reflect.Type, data []byte, path *field.Path) (*field.Path, error) {
	err := json.Unmarshal(data, reflect.New(t).Interface())
	if err == nil || path == nil {
		return nil, nil
	}
	shown := string(data)
	if len(shown) > maxShownValue {
		shown = shown[:maxShownValue] + "..."
	}
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		return path, fmt.Errorf("cannot use %s as %s", te.Value, t)
	case errors.Is(err, resource.ErrFormatWrong), errors.Is(err, resource.ErrNumeric), errors.Is(err, resource.ErrSuffix):
		return path, fmt.Errorf("%s is not a quantity", shown)
	}
	return path, fmt.Errorf("%s: %w", shown, err)
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
		return describeJSONError(cfg, data, err)
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !slices.Contains(strings.Split(f.Tag.Get("profilekit"), ","), hostOnlyTag) {
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
