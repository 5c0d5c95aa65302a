package trustpolicy

import (
	"slices"
	"testing"
)

// FuzzTrustPolicy edits arbitrary documents: no input panics, an added subject
// is present and our statement is gone after RemoveStatement, and every
// statement that is not ours comes through both edits byte for byte.
func FuzzTrustPolicy(f *testing.F) {
	for _, doc := range []string{eksctlPolicy, mixedPolicy, onlyForeign, `{}`, `{"Statement":null}`, `{"Statement":[1]}`, `[]`,
		`{"Statement":[` + taggedForeign + `]}`} {
		f.Add(doc, "team-a", false)
	}
	f.Fuzz(func(t *testing.T, doc, ns string, wildcard bool) {
		e := Edit{Provider: provider, Subjects: []string{"system:serviceaccount:" + ns + ":default-editor"}, Namespace: ns, Wildcard: wildcard, MaxSize: 1 << 20}
		added, _, err := AddSubjects(doc, e)
		if err != nil {
			return
		}
		if has, err := HasSubjects(added, e); err != nil || !has {
			t.Fatalf("subject missing after AddSubjects: %v\n%s", err, added)
		}
		removed, _, err := RemoveStatement(added, e)
		if err != nil {
			t.Fatalf("RemoveStatement of an added policy: %v", err)
		}
		if p, err := parsePolicy(removed); err != nil {
			t.Fatalf("RemoveStatement wrote a policy that does not parse: %v", err)
		} else if own := p.find(e.ID()); own != nil && len(p.statements) > 1 {
			t.Fatalf("our statement is still there after RemoveStatement:\n%s", removed)
		}
		before, after := others(t, doc, e.ID()), others(t, removed, e.ID())
		if !slices.Equal(before, after) {
			t.Fatalf("statements that are not ours changed:\nbefore %q\nafter  %q", before, after)
		}
	})
}

// others returns the bytes of the statements of doc whose Sid is not id.
func others(t *testing.T, doc, id string) []string {
	p, err := parsePolicy(doc)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var out []string
	for _, s := range p.statements {
		if s.str("Sid") == id {
			continue
		}
		b, err := s.encode()
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		out = append(out, string(b))
	}
	return out
}

// FuzzStatementID: two different namespaces never share a Sid, a Sid is
// made of letters and digits only and starts with the plugin's prefix, and
// no namespace's Sid is the wildcard statement's.
func FuzzStatementID(f *testing.F) {
	for _, pair := range [][2]string{{"a-b", "aZb"}, {"team-a", "team-a"}, {"a.b", "aX2Eb"}, {"", "Z"}, {"x", "x-"}} {
		f.Add(pair[0], pair[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ida, idb := StatementID(provider, a), StatementID(provider, b)
		if (ida == idb) != (a == b) {
			t.Fatalf("StatementID(%q) = %q, StatementID(%q) = %q", a, ida, b, idb)
		}
		if ida == WildcardStatementID(provider) {
			t.Fatalf("StatementID(%q) is the wildcard statement's", a)
		}
		if !validSid(ida) || len(ida) <= len(IDPrefix) || ida[:len(IDPrefix)] != IDPrefix {
			t.Fatalf("StatementID(%q) = %q: not profilekit followed by letters and digits", a, ida)
		}
	})
}

func validSid(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}
