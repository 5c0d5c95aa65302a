package apply

import (
	"bytes"
	"testing"
)

// FuzzFieldNames: the reduction that reads bytes gives the bytes the
// decoding one gives, whenever it accepts the input.
func FuzzFieldNames(f *testing.F) {
	for _, seed := range []string{
		`{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:podSelector":{}}}`,
		`{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"1234\"}":{".":{},"f:name":{}}}}}`,
		`{"f:spec":{"f:policyTypes":{"v:\"Ingress\"":{},"v:\"Egress\"":{}},"f:rules":{"i:0":{"f:x":{}}},"f:m":{".":{},"f:k":{}}}}`,
		`{"f:b":{},"f:a":{"f:z":{},".":{},"f:y":{}}}`,
		`{"f:a":{},"f:a":{"f:b":{}}}`,
		`{"f:a<":{},"k:\u00e9":{}}`,
		`{"k:x":{"a" 1}}`,
		`{"f:a":null}`,
		`null`,
		`{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, ok := namedFieldsOf(raw)
		if !ok {
			return
		}
		if want := fieldNamesDecoded(raw); !bytes.Equal(fast, want) {
			t.Errorf("FieldNames(%q): read as bytes %q, decoded %q", raw, fast, want)
		}
	})
}

// TestFieldNamesReadsTheServersSets: the sets the API server writes take
// the path that reads bytes.
func TestFieldNamesReadsTheServersSets(t *testing.T) {
	for _, raw := range []string{
		`{"f:metadata":{"f:annotations":{".":{},"f:profilekit.dev/applied-hash":{}},"f:labels":{".":{},"f:app.kubernetes.io/managed-by":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0f2c4a2e-1b7d-4c55-9a43-6a1f0b9b7e11\"}":{}}},"f:spec":{"f:hard":{"f:limits.cpu":{}}}}`,
		`{"f:spec":{"f:policyTypes":{},"f:ingress":{},"f:podSelector":{}}}`,
	} {
		if _, ok := namedFieldsOf([]byte(raw)); !ok {
			t.Errorf("%s: left to the decoding path", raw)
		}
	}
}

// BenchmarkFieldNames: a ResourceQuota's set as the API server writes it,
// reduced by reading its bytes and by decoding it.
func BenchmarkFieldNames(b *testing.B) {
	raw := []byte(`{"f:metadata":{"f:annotations":{".":{},"f:profilekit.dev/applied-hash":{}},"f:labels":{".":{},"f:app.kubernetes.io/managed-by":{},"f:profilekit.dev/plugin":{},"f:profilekit.dev/profile":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0f2c4a2e-1b7d-4c55-9a43-6a1f0b9b7e11\"}":{}}},"f:spec":{"f:hard":{"f:limits.cpu":{},"f:limits.memory":{},"f:requests.storage":{}}}}`)
	for _, c := range []struct {
		name   string
		reduce func([]byte) []byte
	}{
		{"bytes", FieldNames},
		{"decoded", fieldNamesDecoded},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.reduce(raw)
			}
		})
	}
}
