package irsa

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzTrustPolicy edits arbitrary documents: no input panics, an added subject
// is present and a removed one is gone, and every statement that is not the
// provider's comes through both edits unchanged.
func FuzzTrustPolicy(f *testing.F) {
	for _, doc := range []string{eksctlPolicy, mixedPolicy, onlyForeign, `{}`, `{"Statement":null}`, `{"Statement":[1]}`, `[]`} {
		f.Add(doc, "team-a", false)
	}
	f.Fuzz(func(t *testing.T, doc, ns string, wildcard bool) {
		e := TrustEdit{Provider: provider, Subjects: []string{"system:serviceaccount:" + ns + ":default-editor"}, Wildcard: wildcard, MaxSize: 1 << 20}
		added, _, err := AddSubjects(doc, e)
		if err != nil {
			return
		}
		if has, err := HasSubjects(added, e); err != nil || !has {
			t.Fatalf("subject missing after AddSubjects: %v\n%s", err, added)
		}
		removed, _, err := RemoveSubjects(added, e)
		if err != nil {
			t.Fatalf("RemoveSubjects of an added policy: %v", err)
		}
		if has, _ := HasSubjects(removed, e); has {
			t.Fatalf("subject still there after RemoveSubjects:\n%s", removed)
		}
		before, after := foreign(t, doc), foreign(t, removed)
		if !slices.Equal(before, after) {
			t.Fatalf("foreign statements changed:\nbefore %q\nafter  %q", before, after)
		}
	})
}

// foreign returns the statements of doc that are not the provider's, each
// re-encoded.
func foreign(t *testing.T, doc string) []string {
	p, err := parsePolicy(doc)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var out []string
	for _, s := range p.statements {
		if s.ours(provider) {
			continue
		}
		b, _ := json.Marshal(s)
		out = append(out, string(b))
	}
	return out
}
