package workloadidentity_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/profilekit/profilekit/plugins/workloadidentity"
)

// FuzzMember: two different valid service accounts (namespace, name) of one
// pool are never the same IAM member, so the plugin can only ever add or
// remove its own Profile's.
func FuzzMember(f *testing.F) {
	for _, seed := range [][4]string{{"a-b", "c", "a", "b-c"}, {"a", "b.c", "a.b", "c"}, {"team-a", "default-editor", "team-a", "default-editor"}} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, ns1, sa1, ns2, sa2 string) {
		if !valid(ns1, sa1) || !valid(ns2, sa2) {
			return
		}
		a := workloadidentity.Member("proj-123.svc.id.goog", ns1, sa1)
		b := workloadidentity.Member("proj-123.svc.id.goog", ns2, sa2)
		if (a == b) != (ns1 == ns2 && sa1 == sa2) {
			t.Fatalf("Member(%q, %q) = %q, Member(%q, %q) = %q", ns1, sa1, a, ns2, sa2, b)
		}
	})
}

// valid reports whether namespace is a Profile's (a DNS-1123 label) and name
// a service account's (a DNS-1123 subdomain).
func valid(namespace, name string) bool {
	return len(validation.IsDNS1123Label(namespace)) == 0 && len(validation.IsDNS1123Subdomain(name)) == 0
}
