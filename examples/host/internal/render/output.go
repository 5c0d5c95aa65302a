package render

// This file holds the writing of Render's output: objects as YAML, with
// Secrets' values redacted.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Redact returns u with a Secret's values replaced by their sizes, so that
// no value is ever printed; other objects are returned as they are.
func Redact(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u.GetAPIVersion() != "v1" || u.GetKind() != "Secret" {
		return u
	}
	out := u.DeepCopy()
	for _, field := range []string{"data", "stringData"} {
		m, ok, _ := unstructured.NestedStringMap(out.Object, field)
		if !ok {
			continue
		}
		for k, v := range m {
			n := len(v)
			if field == "data" {
				if b, err := base64.StdEncoding.DecodeString(v); err == nil {
					n = len(b)
				}
			}
			m[k] = fmt.Sprintf("(redacted, %d bytes)", n)
		}
		_ = unstructured.SetNestedStringMap(out.Object, m, field)
	}
	return out
}

// withoutEmptyUIDs returns u, or a copy of it whose owner references leave
// out the uid they do not have offline (the Profile has none before it is
// created), rather than print an empty one.
func withoutEmptyUIDs(u *unstructured.Unstructured) *unstructured.Unstructured {
	refs, found, _ := unstructured.NestedSlice(u.Object, "metadata", "ownerReferences")
	if !found {
		return u
	}
	changed := false
	for _, r := range refs {
		if m, ok := r.(map[string]any); ok && m["uid"] == "" {
			delete(m, "uid")
			changed = true
		}
	}
	if !changed {
		return u
	}
	out := u.DeepCopy()
	_ = unstructured.SetNestedSlice(out.Object, refs, "metadata", "ownerReferences")
	return out
}

// WriteYAML writes the objects as YAML documents, each after a comment that
// names its Profile and plugin.
func WriteYAML(w io.Writer, objs []Object) error {
	var b bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		data, err := yaml.Marshal(withoutEmptyUIDs(o.Object).Object)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", o.Object.GetKind(), o.Object.GetName(), err)
		}
		fmt.Fprintf(&b, "# profile: %s, plugin: %s\n", o.Profile, o.Plugin)
		b.Write(data)
	}
	_, err := w.Write(b.Bytes())
	return err
}
