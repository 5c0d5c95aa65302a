package diff

// This file holds how diff reports: a summary (Profiles, objects by kind and
// verb, outside calls, errors), then a unified diff of each object as YAML,
// in a stable order; and the exit code, as kubectl diff's.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/examples/host/internal/render"
)

// Exit codes, as kubectl diff's.
const (
	ExitSame    = 0
	ExitChanges = 1
	ExitError   = 2
)

// ExitCode returns ExitError when any Profile has an error, else
// ExitChanges when anything would change, else ExitSame.
func ExitCode(results []Result) int {
	code := ExitSame
	for _, r := range results {
		if len(r.Errors) > 0 {
			return ExitError
		}
		if r.Touched() {
			code = ExitChanges
		}
	}
	return code
}

// kindName names a kind in the summary as kubectl does: Kind.group, or
// Kind for the core group.
func kindName(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Kind
	}
	return gvk.Kind + "." + gvk.Group
}

// WriteSummary writes how many Profiles would change, the objects by kind
// and verb, the outside calls by system, and every Profile's errors and
// notes.
func WriteSummary(w io.Writer, results []Result) error {
	var b bytes.Buffer
	touched, failed := 0, 0
	counts := map[string]map[Verb]int{}
	calls := map[string]int{}
	for _, r := range results {
		if r.Touched() {
			touched++
		}
		if len(r.Errors) > 0 {
			failed++
		}
		for _, c := range r.Changes {
			k := kindName(c.GVK)
			if counts[k] == nil {
				counts[k] = map[Verb]int{}
			}
			counts[k][c.Verb]++
		}
		for _, c := range r.Calls {
			calls[c.System]++
		}
	}
	fmt.Fprintf(&b, "Profiles: %d checked, %d touched, %d with errors\n", len(results), touched, failed)
	if len(counts) == 0 {
		b.WriteString("Objects: no change\n")
	} else {
		b.WriteString("Objects:\n")
		width := len(slices.MaxFunc(slices.Collect(maps.Keys(counts)), func(a, b string) int { return cmp.Compare(len(a), len(b)) }))
		for _, k := range slices.Sorted(maps.Keys(counts)) {
			var parts []string
			for _, v := range []Verb{VerbCreate, VerbChange, VerbDelete} {
				if n := counts[k][v]; n > 0 {
					parts = append(parts, fmt.Sprintf("%s %d", v, n))
				}
			}
			fmt.Fprintf(&b, "  %-*s  %s\n", width, k, strings.Join(parts, ", "))
		}
	}
	if len(calls) == 0 {
		b.WriteString("Outside calls: none\n")
	} else {
		b.WriteString("Outside calls (refused, none made):\n")
		for _, s := range slices.Sorted(maps.Keys(calls)) {
			fmt.Fprintf(&b, "  would call %s: %d\n", s, calls[s])
		}
	}
	for _, r := range results {
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "error: profile %s: %s\n", r.Profile, e)
		}
	}
	for _, r := range results {
		for _, n := range r.Notes {
			if !strings.HasPrefix(n, "profile ") {
				n = "profile " + r.Profile + ": " + n
			}
			fmt.Fprintf(&b, "note: %s\n", n)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteDiffs writes, for each Profile by name, its outside calls and a
// unified diff of each object it would change, as YAML, live first.
func WriteDiffs(w io.Writer, results []Result) error {
	var b bytes.Buffer
	for _, r := range results {
		for _, c := range r.Calls {
			fmt.Fprintf(&b, "# profile %s, plugin %s: would call %s (refused)\n", c.Profile, c.Plugin, c.System)
		}
		for _, c := range r.Changes {
			before, err := shown(c.Before)
			if err != nil {
				return err
			}
			after, err := shown(c.After)
			if err != nil {
				return err
			}
			path := c.GVK.GroupVersion().String() + "/" + c.GVK.Kind + "/" + c.Name
			if c.Namespace != "" {
				path = c.GVK.GroupVersion().String() + "/" + c.GVK.Kind + "/" + c.Namespace + "/" + c.Name
			}
			from, to := "live/"+path, "desired/"+path
			switch c.Verb {
			case VerbCreate:
				from = "/dev/null"
			case VerbDelete:
				to = "/dev/null"
			}
			fmt.Fprintf(&b, "# profile %s, plugin %s: %s %s %s\n", c.Profile, c.Plugin, c.Verb, kindName(c.GVK), objectName(c.Namespace, c.Name))
			if c.Note != "" {
				fmt.Fprintf(&b, "# %s\n", c.Note)
			}
			fmt.Fprintf(&b, "--- %s\n+++ %s\n", from, to)
			for _, line := range unified(before, after, 3) {
				b.WriteString(line)
				b.WriteByte('\n')
			}
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// shown returns u as the lines of YAML a diff shows: without what the API
// server keeps about the object (managed fields, versions, uid, creation
// time, status), and a Secret's values as their sizes.
func shown(u *unstructured.Unstructured) ([]string, error) {
	if u == nil {
		return nil, nil
	}
	u = render.Redact(u).DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	data, err := yaml.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"), nil
}

// same reports whether before and after would show alike: the apply would
// change nothing that a diff shows.
func same(before, after *unstructured.Unstructured) bool {
	if before == nil || after == nil {
		return false
	}
	b, err1 := shown(before)
	a, err2 := shown(after)
	return err1 == nil && err2 == nil && slices.Equal(a, b)
}

// equalJSON reports whether a and b encode to the same JSON values,
// whatever the order of their keys.
func equalJSON(a, b any) bool {
	var x, y any
	for _, p := range []struct {
		in  any
		out *any
	}{{a, &x}, {b, &y}} {
		data, err := json.Marshal(p.in)
		if err != nil {
			return false
		}
		if err := json.Unmarshal(data, p.out); err != nil {
			return false
		}
	}
	return reflect.DeepEqual(x, y)
}
