package apply_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/plugins/apply"
)

func TestFieldNames(t *testing.T) {
	for _, c := range []struct {
		reason    string
		raw, want string
	}{{
		reason: "fields known by name stay, at every depth",
		raw:    `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:podSelector":{}}}`,
		want:   `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:podSelector":{}}}`,
	}, {
		reason: "keyed items, which name the Profile's UID, fold into one member",
		raw:    `{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"1234\"}":{}}}}`,
		want:   `{"f:metadata":{"f:ownerReferences":{".":{}}}}`,
	}, {
		reason: "value and index items and the dot fold together; named fields beside them stay",
		raw:    `{"f:spec":{"f:policyTypes":{"v:\"Ingress\"":{},"v:\"Egress\"":{}},"f:rules":{"i:0":{"f:x":{}}},"f:m":{".":{},"f:k":{}}}}`,
		want:   `{"f:spec":{"f:m":{".":{},"f:k":{}},"f:policyTypes":{".":{}},"f:rules":{".":{}}}}`,
	}, {
		reason: "two Profiles' sets that differ in keys only become the same bytes",
		raw:    `{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"5678\"}":{".":{},"f:name":{}}}}}`,
		want:   `{"f:metadata":{"f:ownerReferences":{".":{}}}}`,
	}, {
		reason: "a set that does not decode is left as it is",
		raw:    `not json`,
		want:   `not json`,
	}} {
		if diff := cmp.Diff(c.want, string(apply.FieldNames([]byte(c.raw)))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}
