package plugins

import (
	"fmt"
	"regexp"
	"slices"
)

// Registry holds plugin definitions by kind. It is built once and read-only
// after that, so it is safe to share.
type Registry struct {
	defs map[string]Definition
}

// kindPattern is what a plugin kind may be: letters, digits and dashes,
// starting with a letter, at most 63 characters. Upstream's CamelCase kinds
// (WorkloadIdentity, AwsIamForServiceAccount) fit, and so does every use of a
// kind: a label value, the name part of the finalizer profilekit.dev/<kind>,
// a field manager.
var kindPattern = regexp.MustCompile(`^[A-Za-z]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$`)

// NewRegistry returns a registry of defs. A kind that is empty, not of
// letters, digits and dashes, or given twice is an error.
func NewRegistry(defs ...Definition) (*Registry, error) {
	r := &Registry{defs: make(map[string]Definition, len(defs))}
	for _, d := range defs {
		if d.Plugin == nil {
			return nil, fmt.Errorf("plugin definition without a plugin")
		}
		kind := d.Kind()
		if !kindPattern.MatchString(kind) {
			return nil, fmt.Errorf("plugin kind %q: want letters, digits and dashes, starting with a letter and ending with a letter or digit, at most 63 characters", kind)
		}
		if d.Upstream && kind != CoreKind {
			return nil, fmt.Errorf("plugin kind %q: only the %s plugin may write the upstream controller's objects", kind, CoreKind)
		}
		if _, dup := r.defs[kind]; dup {
			return nil, fmt.Errorf("plugin kind %q registered twice", kind)
		}
		r.defs[kind] = d
	}
	return r, nil
}

// Get returns the definition of kind.
func (r *Registry) Get(kind string) (Definition, bool) {
	d, ok := r.defs[kind]
	return d, ok
}

// Kinds returns the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	kinds := make([]string, 0, len(r.defs))
	for k := range r.defs {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// Definitions returns the registered definitions, sorted by kind.
func (r *Registry) Definitions() []Definition {
	out := make([]Definition, 0, len(r.defs))
	for _, k := range r.Kinds() {
		out = append(out, r.defs[k])
	}
	return out
}
