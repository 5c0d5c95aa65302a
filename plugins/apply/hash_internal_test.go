package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// referenceHash is the applied hash as every host so far computed it:
// encoding/json's bytes of the object, the Profile's UID replaced by 0x01
// and then its name by 0x00, hashed.
func referenceHash(p *kubeflowv1.Profile, obj map[string]any) string {
	data, err := json.Marshal(obj)
	if err != nil {
		data = []byte(err.Error())
	}
	if p.UID != "" {
		data = bytes.ReplaceAll(data, []byte(p.UID), []byte{1})
	}
	if p.Name != "" {
		data = bytes.ReplaceAll(data, []byte(p.Name), []byte{0})
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// ownedObjects returns profileObjects as own leaves them, and the Applier
// that owned them.
func ownedObjects(t *testing.T) (*Applier, []*unstructured.Unstructured) {
	t.Helper()
	desired := profileObjects("team-a")
	a := benchApplier(desired)
	var out []*unstructured.Unstructured
	for _, d := range desired {
		u, err := toUnstructured(d)
		if err != nil {
			t.Fatal(err)
		}
		a.own(u)
		out = append(out, u)
	}
	return a, out
}

// Every object keeps the hash it had: a changed hash would rewrite every
// object of every Profile once.
func TestAppliedHashIsTheReferenceHash(t *testing.T) {
	a, owned := ownedObjects(t)
	for _, u := range owned {
		got := u.GetAnnotations()["profilekit.dev/applied-hash"]
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations", "profilekit.dev/applied-hash")
		if len(u.GetAnnotations()) == 0 {
			unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
		}
		if want := referenceHash(a.profile, u.Object); got != want {
			t.Errorf("%s %s: hash %s, want %s", u.GetKind(), u.GetName(), got, want)
		}
	}
}

// The encoder writes encoding/json's bytes for every value an object's
// JSON decodes to: strings with every ASCII byte, HTML characters, invalid
// UTF-8, U+2028 and U+2029; numbers small, large, negative and integral;
// nested maps and lists; and values of other types.
func TestAppendJSONIsEncodingJSON(t *testing.T) {
	var ascii strings.Builder
	for b := range 128 {
		ascii.WriteByte(byte(b))
	}
	values := []any{
		nil, true, false, "", ascii.String(), "<a&b>", "\xff\xfe bad", "line\u2028para\u2029", "é 日本 🙂",
		0.0, math.Copysign(0, -1), 1.0, -1.5, 1e-7, 1e-6, 123456789.0, 1e20, 1e21, 1.5e300, -2.5e-300, math.MaxFloat64, math.SmallestNonzeroFloat64,
		int64(-42), 7, int64(math.MaxInt64),
		[]any{}, map[string]any{}, []any{1.0, "x", nil, map[string]any{"b": 1.0, "a": []any{}}},
		map[string]any{"z": 1.0, "a": map[string]any{"y": "<", "b": nil}, "M": true, "é": "x", "": "empty"},
		map[string]string{"k": "v"}, []string{"a", "<"}, int32(3), float32(0.1),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		values = append(values, math.Float64frombits(r.Uint64()), r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)), randomString(r))
	}
	var s hashScratch
	for _, v := range values {
		want, wantErr := json.Marshal(v)
		got, err := s.appendJSON(nil, v, 0)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%#v: error %v, encoding/json's %v", v, err, wantErr)
			continue
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Errorf("%#v: %s, encoding/json writes %s", v, got, want)
		}
	}
}

func randomString(r *rand.Rand) string {
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return string(b)
}

// The Profile's name and UID are replaced wherever they appear, in keys
// and values, also where one holds the other or they overlap the JSON's
// own characters.
func TestAppliedHashReplacesNameAndUID(t *testing.T) {
	for _, p := range []*kubeflowv1.Profile{
		{},
		profileNamed("a", ""),
		profileNamed("team", "uid-team-1"),
		profileNamed("e", "e"),
		profileNamed("kind", "0b6f8e0c-3a1d-4d8e-9a55-2b1f0c7d9e11"),
	} {
		a := &Applier{kind: "bench", profile: p}
		obj := map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": p.Name + "-x", "namespace": p.Name, "labels": map[string]any{p.Name: string(p.UID) + p.Name}},
			"data":     map[string]any{"k": "kind team a e " + string(p.UID)},
		}
		if got, want := a.appliedHash(obj), referenceHash(p, obj); got != want {
			t.Errorf("Profile %q uid %q: hash %s, want %s", p.Name, p.UID, got, want)
		}
	}
}

func profileNamed(name, uid string) *kubeflowv1.Profile {
	p := &kubeflowv1.Profile{}
	p.Name, p.UID = name, types.UID(uid)
	return p
}

// A request body is the bytes Unstructured.MarshalJSON writes, less its
// closing newline.
func TestEncodeObjectIsMarshalJSON(t *testing.T) {
	_, owned := ownedObjects(t)
	for _, u := range owned {
		want, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeObject(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, bytes.TrimSuffix(want, []byte("\n"))) {
			t.Errorf("%s %s:\n%s\nUnstructured.MarshalJSON writes\n%s", u.GetKind(), u.GetName(), got, want)
		}
	}
}
