package templates

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/plugins/placeholders"
)

// placeholderNames are the placeholders a template's string values take.
var placeholderNames = []string{
	placeholders.Namespace, placeholders.Profile, placeholders.Owner,
	placeholders.OwnerKind, placeholders.Label,
}

// Object is a template's Kubernetes object: its fields as JSON decodes them
// (maps, lists, strings, int64 and float64 numbers, booleans).
type Object map[string]any

// UnmarshalJSON takes the object as a JSON (or YAML) mapping, or as a
// string that holds one YAML document of it, so that a manifest can be
// pasted as it is. Anything else, more than one document, or YAML that is
// not valid (a duplicate key, say) is an error.
func (o *Object) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var text string
		if err := json.Unmarshal(data, &text); err != nil {
			return err
		}
		doc, err := oneDocument(text)
		if err != nil {
			return err
		}
		data = doc
	}
	var m map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil {
		return fmt.Errorf("want a Kubernetes object, as a mapping or a string of YAML: %w", err)
	}
	if len(m) == 0 {
		return errors.New("want a Kubernetes object, got nothing")
	}
	*o = m
	return nil
}

// oneDocument returns the single YAML document text holds, as JSON. A
// document of nothing but comments and white space is none, as kubectl
// reads a file: a manifest may begin with a comment and "---".
func oneDocument(text string) ([]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not valid YAML: %w", err)
		}
		j, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("not valid YAML: %w", err)
		}
		if string(j) != "null" {
			docs = append(docs, j)
		}
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("holds %d YAML documents, want one object", len(docs))
	}
	return docs[0], nil
}

// gvk returns the object's kind; the zero kind when it has none (check
// reports that).
func (o Object) gvk() schema.GroupVersionKind {
	apiVersion, _ := o["apiVersion"].(string)
	kind, _ := o["kind"].(string)
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return gv.WithKind(kind)
}

// metadata returns the object's metadata; nil when it has none.
func (o Object) metadata() map[string]any {
	m, _ := o["metadata"].(map[string]any)
	return m
}

// name returns metadata.name as written, placeholders and all.
func (o Object) name() string {
	n, _ := o.metadata()["name"].(string)
	return n
}

// metadataFields are what a template's metadata may hold: the namespace is
// each Profile's, and the owner reference and server-side fields are not
// the template's to set.
var metadataFields = []string{"name", "labels", "annotations"}

// check returns every problem of the object that no Profile can mend: the
// fields it must have and may not have, its placeholders, its labels and
// annotations, and the rules it breaks as written.
func (o Object) check(at *field.Path, r rules) []error {
	if len(o) == 0 {
		return []error{fmt.Errorf("%s: required: the Kubernetes object to write", at)}
	}
	var errs []error
	add := func(p *field.Path, format string, args ...any) {
		errs = append(errs, fmt.Errorf(p.String()+": "+format, args...))
	}
	apiVersion, _ := o["apiVersion"].(string)
	kind, _ := o["kind"].(string)
	if strings.Contains(apiVersion+kind, "{{") {
		add(at, "apiVersion and kind take no placeholders")
	}
	if _, err := (KindRef{APIVersion: apiVersion, Kind: kind}).GroupVersionKind(); err != nil {
		add(at, "%v", err)
	}
	if _, ok := o["status"]; ok {
		// The API server keeps a status of its own and drops one applied
		// with the object: a template's would be sent again on every pass.
		add(at.Child("status"), "leave it out: an object's status is the API server's and its controllers'")
	}
	meta, ok := o["metadata"].(map[string]any)
	if !ok {
		add(at.Child("metadata"), "required, with a name")
	}
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		switch {
		case k == "namespace":
			add(at.Child("metadata", k), "leave it out: the object goes into the namespace of each Profile the template is for")
		case !slices.Contains(metadataFields, k):
			add(at.Child("metadata", k), "a template's metadata holds %s only", strings.Join(metadataFields, ", "))
		}
	}
	if name, _ := meta["name"].(string); name == "" {
		add(at.Child("metadata", "name"), "required")
	}
	for _, f := range []string{"labels", "annotations"} {
		v, present := meta[f]
		m, ok := v.(map[string]any)
		if present && !ok {
			add(at.Child("metadata", f), "want a mapping of strings")
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			errs = append(errs, checkKey(at.Child("metadata", f), k, m[k])...)
		}
	}
	walkStrings(map[string]any(o), at, func(p *field.Path, s string) {
		if err := placeholders.CheckAmong(s, placeholderNames...); err != nil {
			add(p, "%v", err)
		}
	})
	if len(errs) > 0 {
		return errs
	}
	// As written: values with placeholders are checked again for each
	// Profile, once filled in.
	if err := r.refuse(o.gvk(), o, true); err != nil {
		add(at, "%v", err)
	}
	return errs
}

// checkKey checks one label or annotation key of a template, and that its
// value is a string.
func checkKey(at *field.Path, k string, v any) []error {
	var errs []error
	if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("%s: key %q: %s", at, k, strings.Join(msgs, "; ")))
	}
	if isOurKey(k) {
		errs = append(errs, fmt.Errorf("%s: key %q is profilekit's own: a template may not claim another plugin's objects or records", at, k))
	}
	if _, ok := v.(string); !ok {
		errs = append(errs, fmt.Errorf("%s: value of %q: want a string, got %T", at, k, v))
	}
	return errs
}

// walkStrings calls fn with every string value in v (not map keys) and its
// path under at.
func walkStrings(v any, at *field.Path, fn func(*field.Path, string)) {
	switch t := v.(type) {
	case string:
		fn(at, t)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			walkStrings(t[k], at.Child(k), fn)
		}
	case []any:
		for i, e := range t {
			walkStrings(e, at.Index(i), fn)
		}
	}
}

// expand returns a copy of v with fn applied to every string value (not
// to map keys).
func expand(v any, fn func(string) string) any {
	switch t := v.(type) {
	case string:
		return fn(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = expand(e, fn)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = expand(e, fn)
		}
		return out
	}
	return v
}
