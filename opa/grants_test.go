package opa

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecode(t *testing.T) {
	cases := []struct {
		reason  string
		doc     string
		want    []Bucket
		wantErr string
	}{{
		reason: "the list shape, readers and writers sorted and unique, pvName defaults to the bucket",
		doc: `[{"bucketName":"census","pvName":"census-ro","subfolder":"2026","readers":["b","a","b"],"writers":["c"],"spn":"sp-1"},
		       {"bucketName":"labour","readers":["a"]}]`,
		want: []Bucket{
			{Name: "census", Volume: "census-ro", Subfolder: "2026", Readers: []string{"a", "b"}, Writers: []string{"c"}, Identity: "sp-1"},
			{Name: "labour", Volume: "labour", Readers: []string{"a"}},
		},
	}, {
		reason: "the gateway shape; keys that are not buckets are ignored",
		doc: `{"census":{"readers":["a"],"writers":["b"],"spn":"sp-1","name":"census-pv"},
		       "httpapi":{"authz":{"allow":true}}, "version": 3}`,
		want: []Bucket{{Name: "census", Volume: "census-pv", Readers: []string{"a"}, Writers: []string{"b"}, Identity: "sp-1"}},
	}, {
		reason: "an empty list grants nothing",
		doc:    `[]`,
	}, {
		reason: "a gateway document with no buckets grants nothing",
		doc:    `{"httpapi":{}}`,
	}, {
		reason:  "null is not a grants document",
		doc:     `null`,
		wantErr: "want a list of buckets or an object",
	}, {
		reason:  "a misspelt field is an error, not a dropped grant",
		doc:     `[{"bucketName":"census","reader":["a"]}]`,
		wantErr: `unknown field "reader"`,
	}, {
		reason:  "a misspelt field in the gateway shape is an error",
		doc:     `{"census":{"readers":["a"],"writter":["b"]}}`,
		wantErr: `unknown field "writter"`,
	}, {
		reason:  "an invalid container name names the bucket and the field",
		doc:     `[{"bucketName":"Census_2026","readers":["a"]}]`,
		wantErr: `bucket "Census_2026": bucketName`,
	}, {
		reason:  "an invalid namespace is an error",
		doc:     `[{"bucketName":"census","readers":["Team A"]}]`,
		wantErr: `namespace "Team A"`,
	}, {
		reason:  "two buckets with one volume name are an error",
		doc:     `[{"bucketName":"census","pvName":"x"},{"bucketName":"labour","pvName":"x"}]`,
		wantErr: `pvName "x" is used twice`,
	}, {
		reason:  "a subfolder that climbs out is an error",
		doc:     `[{"bucketName":"census","subfolder":"../other"}]`,
		wantErr: `subfolder "../other"`,
	}, {
		reason:  "a number is not a grants document",
		doc:     `42`,
		wantErr: "want a list of buckets or an object",
	}, {
		reason:  "truncated JSON is an error",
		doc:     `[{"bucketName":"census"`,
		wantErr: "unexpected EOF",
	}}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			g, err := Decode([]byte(c.doc))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Decode error = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, g.Buckets()); diff != "" {
				t.Errorf("buckets (-want +got):\n%s", diff)
			}
		})
	}
}

func mustGrants(t *testing.T, doc string) Grants {
	t.Helper()
	g, err := Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestAccess(t *testing.T) {
	g := mustGrants(t, `[{"bucketName":"census","readers":["a","b"],"writers":["b"]},{"bucketName":"labour","writers":["a"]}]`)
	want := map[string][]Access{
		"a": {{Bucket: g.buckets[0], Mode: ReadOnly}, {Bucket: g.buckets[1], Mode: ReadWrite}},
		// A namespace that reads and writes gets one read-write volume.
		"b": {{Bucket: g.buckets[0], Mode: ReadWrite}},
		"c": nil,
	}
	for ns, w := range want {
		if diff := cmp.Diff(w, g.For(ns)); diff != "" {
			t.Errorf("For(%s) (-want +got):\n%s", ns, diff)
		}
	}
	if diff := cmp.Diff([]string{"a", "b"}, g.Namespaces()); diff != "" {
		t.Errorf("Namespaces (-want +got):\n%s", diff)
	}
	if g.Len() != 3 {
		t.Errorf("Len = %d, want 3", g.Len())
	}
}

func TestChangedAndDropped(t *testing.T) {
	base := `[{"bucketName":"census","readers":["a","b"],"writers":["c"]},{"bucketName":"labour","readers":["d"]}]`
	cases := []struct {
		reason  string
		next    string
		changed []string
		dropped int
	}{
		{reason: "the same document changes nothing", next: base},
		{reason: "the same buckets in another order change nothing",
			next: `[{"bucketName":"labour","readers":["d"]},{"bucketName":"census","readers":["b","a"],"writers":["c"]}]`},
		{reason: "a new reader concerns only that namespace",
			next: `[{"bucketName":"census","readers":["a","b","e"],"writers":["c"]},{"bucketName":"labour","readers":["d"]}]`, changed: []string{"e"}},
		{reason: "a reader made writer concerns only that namespace and drops nothing",
			next: `[{"bucketName":"census","readers":["b"],"writers":["a","c"]},{"bucketName":"labour","readers":["d"]}]`, changed: []string{"a"}},
		{reason: "a withdrawn bucket concerns its namespaces",
			next: `[{"bucketName":"census","readers":["a","b"],"writers":["c"]}]`, changed: []string{"d"}, dropped: 1},
		{reason: "a changed identity concerns every namespace of the bucket",
			next: `[{"bucketName":"census","readers":["a","b"],"writers":["c"],"spn":"x"},{"bucketName":"labour","readers":["d"]}]`, changed: []string{"a", "b", "c"}},
		{reason: "nothing after something drops everything", next: `[]`, changed: []string{"a", "b", "c", "d"}, dropped: 4},
	}
	old := mustGrants(t, base)
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			next := mustGrants(t, c.next)
			if diff := cmp.Diff(c.changed, Changed(old, next)); diff != "" {
				t.Errorf("Changed (-want +got):\n%s", diff)
			}
			if got := Dropped(old, next); got != c.dropped {
				t.Errorf("Dropped = %d, want %d", got, c.dropped)
			}
		})
	}
}

func TestDecodeConfigMap(t *testing.T) {
	g, err := DecodeConfigMap(map[string]string{
		"unclassified.json": `[{"bucketName":"census","pvName":"census","readers":["a"],"spn":"sp"}]`,
		"more.json":         `[{"bucketName":"labour","subfolder":"x/y","writers":["b"]}]`,
		"empty.json":        `[]`,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Bucket{
		{Name: "census", Volume: "census", Readers: []string{"a"}, Identity: "sp"},
		{Name: "labour", Volume: "labour", Subfolder: "x/y", Writers: []string{"b"}},
	}
	if diff := cmp.Diff(want, g.Buckets()); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
	for _, bad := range []map[string]string{
		{"a": `{"census":{"readers":["a"]}}`},
		{"a": `[]`, "b": `not json`},
		{"a": `null`},
	} {
		if _, err := DecodeConfigMap(bad); err == nil {
			t.Errorf("DecodeConfigMap(%v) = nil error, want one", bad)
		}
	}
}

func TestValidateContainerName(t *testing.T) {
	for name, ok := range map[string]bool{
		"abc": true, "a-b-c": true, strings.Repeat("a", 63): true, "0abc": true, "zz-top9": true,
		"ab": false, strings.Repeat("a", 64): false, "a--b": false, "-ab": false, "ab-": false, "aBc": false, "a_b": false,
	} {
		if err := ValidateContainerName(name); (err == nil) != ok {
			t.Errorf("ValidateContainerName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
