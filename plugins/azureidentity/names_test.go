package azureidentity_test

import (
	"testing"

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
