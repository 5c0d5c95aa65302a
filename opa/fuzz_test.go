package opa

import (
	"testing"
)

// FuzzDecode feeds both shapes to the decoder: it never panics, and what it
// accepts is a normalised snapshot that survives a second decode unchanged.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`[{"bucketName":"census","pvName":"census-ro","subfolder":"2026","readers":["a"],"writers":["b"],"spn":"sp"}]`,
		`{"census":{"readers":["a"],"writers":["b"],"spn":"sp","name":"census"},"httpapi":{"x":1}}`,
		`[]`, `{}`, `null`, `"x"`, `[{"bucketName":"a--b"}]`, `{"a":{"readers":null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Decode(data)
		if err != nil {
			return
		}
		for _, b := range g.Buckets() {
			if err := b.validate(); err != nil {
				t.Fatalf("accepted an invalid bucket: %v", err)
			}
		}
		n := 0
		for _, ns := range g.Namespaces() {
			n += len(g.For(ns))
		}
		if n != g.Len() {
			t.Fatalf("Len = %d, but namespaces hold %d grants", g.Len(), n)
		}
		if len(Changed(g, g)) != 0 || Dropped(g, g) != 0 {
			t.Fatal("a snapshot differs from itself")
		}
	})
}

// FuzzDecodeConfigMap feeds ConfigMap data of two keys to its decoder.
func FuzzDecodeConfigMap(f *testing.F) {
	f.Add(`[{"bucketName":"census","readers":["a"]}]`, `[]`)
	f.Add(`[{"bucketName":"census","pvName":"x"}]`, `[{"bucketName":"labour","pvName":"x"}]`)
	f.Add(`{}`, `null`)
	f.Fuzz(func(t *testing.T, a, b string) {
		g, err := DecodeConfigMap(map[string]string{"a": a, "b": b})
		if err != nil {
			return
		}
		for _, bk := range g.Buckets() {
			if err := bk.validate(); err != nil {
				t.Fatalf("accepted an invalid bucket: %v", err)
			}
		}
	})
}
