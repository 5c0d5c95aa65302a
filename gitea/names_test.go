package gitea_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/profilekit/profilekit/gitea"
)

// fuzzPrefixes are valid name prefixes of which none starts another, as
// Config.Validate requires of instances that share a server.
var fuzzPrefixes = []string{"gitea_", "g_", "giteapb_", "gitea-unclassified_", strings.Repeat("p", 31) + "_"}

// namespaceOf maps any bytes to a valid namespace name (a DNS-1123 label):
// each byte picks one of its 37 characters, the ends are made alphanumeric,
// and the length is at most 63.
func namespaceOf(b []byte) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
	if len(b) == 0 {
		return "a"
	}
	if len(b) > validation.DNS1123LabelMaxLength {
		b = b[:validation.DNS1123LabelMaxLength]
	}
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = alphabet[int(c)%len(alphabet)]
	}
	if out[0] == '-' {
		out[0] = 'a'
	}
	if out[len(out)-1] == '-' {
		out[len(out)-1] = 'z'
	}
	return string(out)
}

// FuzzName checks that no two namespaces share a role and database name,
// with one prefix or two of which neither starts the other, whether their
// names are short or hashed, and that every name fits PostgreSQL's limit.
func FuzzName(f *testing.F) {
	victim := "victim-" + strings.Repeat("v", 53)
	f.Add(uint8(0), uint8(0), []byte(victim), []byte(strings.TrimPrefix(legacyName("gitea_", victim), "gitea_")))
	f.Add(uint8(0), uint8(0), []byte(strings.Repeat("a", 57)), []byte(strings.Repeat("a", 58)))
	f.Add(uint8(0), uint8(0), []byte(strings.Repeat("x", 60)+"one"), []byte(strings.Repeat("x", 60)+"two"))
	f.Add(uint8(0), uint8(1), []byte("itea_team"), []byte("team"))
	f.Add(uint8(2), uint8(0), []byte("team-a"), []byte("pb_team-a"))
	f.Add(uint8(4), uint8(4), []byte(strings.Repeat("q", 40)), []byte(strings.Repeat("q", 31)))
	f.Fuzz(func(t *testing.T, pa, pb uint8, a, b []byte) {
		p1, p2 := fuzzPrefixes[int(pa)%len(fuzzPrefixes)], fuzzPrefixes[int(pb)%len(fuzzPrefixes)]
		n1, n2 := namespaceOf(a), namespaceOf(b)
		if msgs := validation.IsDNS1123Label(n1); len(msgs) > 0 {
			t.Fatalf("namespaceOf gave %q: %v", n1, msgs)
		}
		x, y := gitea.Name(p1, n1), gitea.Name(p2, n2)
		for _, n := range []string{x, y} {
			if len(n) > gitea.MaxIdentifier || strings.ContainsRune(n, 0) {
				t.Fatalf("name %q of %d bytes", n, len(n))
			}
		}
		if !strings.HasPrefix(x, p1) {
			t.Fatalf("Name(%q, %q) = %q lacks its prefix", p1, n1, x)
		}
		if x == y && (p1 != p2 || n1 != n2) {
			t.Fatalf("Name(%q, %q) = Name(%q, %q) = %q", p1, n1, p2, n2, x)
		}
	})
}
