package azureidentity_test

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/profilekit/profilekit/plugins/azureidentity"
)

// TestCredentialNamesDoNotCollide gives pairs of different service accounts
// whose credential names must differ: separators inside names, dots against
// dashes, and long names that differ only past the length limit.
func TestCredentialNamesDoNotCollide(t *testing.T) {
	long := "x"
	for len(long) < 120 {
		long += "x"
	}
	tests := []struct {
		reason   string
		ns1, sa1 string
		ns2, sa2 string
	}{
		{reason: "a dash in the namespace against one in the name", ns1: "a-b", sa1: "c", ns2: "a", sa2: "b-c"},
		{reason: "a dot against a dash", ns1: "team", sa1: "a.b", ns2: "team", sa2: "a-b"},
		{reason: "names that differ only past 120 characters", ns1: "team", sa1: long + "a", ns2: "team", sa2: long + "b"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			a, b := azureidentity.CredentialName(tt.ns1, tt.sa1), azureidentity.CredentialName(tt.ns2, tt.sa2)
			if a == b {
				t.Errorf("CredentialName(%q, %q) = CredentialName(%q, %q) = %q", tt.ns1, tt.sa1, tt.ns2, tt.sa2, a)
			}
		})
	}
}

// A name of exactly Azure's 120 characters is still the short, readable
// form; one character more is the hashed one, of the same length.
func TestCredentialNameAtTheLimit(t *testing.T) {
	ns := "team-a"
	sa := strings.Repeat("s", 120-len(azureidentity.CredentialPrefix)-len(ns)-1)
	if got, want := azureidentity.CredentialName(ns, sa), azureidentity.CredentialPrefix+ns+"_"+sa; got != want {
		t.Errorf("at 120 characters: %q, want the short form %q", got, want)
	}
	longer := azureidentity.CredentialName(ns, sa+"s")
	if strings.Contains(longer, "_") || len(longer) != 120 {
		t.Errorf("at 121 characters: %q (%d), want the hashed form of 120", longer, len(longer))
	}
}

// azureName is Azure's rule for a federated credential's name.
var azureName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]{2,119}$`)

// FuzzCredentialName: two different valid service accounts (namespace, name)
// never share a credential name, short or hashed, and every name keeps
// Azure's rules and the plugin's prefix.
func FuzzCredentialName(f *testing.F) {
	long := strings.Repeat("x", 120)
	for _, seed := range [][4]string{
		{"a-b", "c", "a", "b-c"}, {"team", "a.b", "team", "a-b"}, {"team", long + "a", "team", long + "b"},
		{"team-a", "default-editor", "team-a", "default-editor"}, {"a", "b_c", "a", "b.c"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, ns1, sa1, ns2, sa2 string) {
		if !valid(ns1, sa1) || !valid(ns2, sa2) {
			return
		}
		a, b := azureidentity.CredentialName(ns1, sa1), azureidentity.CredentialName(ns2, sa2)
		if (a == b) != (ns1 == ns2 && sa1 == sa2) {
			t.Fatalf("CredentialName(%q, %q) = %q, CredentialName(%q, %q) = %q", ns1, sa1, a, ns2, sa2, b)
		}
		if !azureName.MatchString(a) || !strings.HasPrefix(a, azureidentity.CredentialPrefix) {
			t.Fatalf("CredentialName(%q, %q) = %q breaks Azure's rules or lacks the prefix", ns1, sa1, a)
		}
	})
}

// valid reports whether namespace is a Profile's (a DNS-1123 label) and name
// a service account's (a DNS-1123 subdomain).
func valid(namespace, name string) bool {
	return len(validation.IsDNS1123Label(namespace)) == 0 && len(validation.IsDNS1123Subdomain(name)) == 0
}
