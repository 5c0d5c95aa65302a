package kubeflow_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

// A plugin's spec keeps every field, however deep and whatever the API server
// knows of it, through both served versions.
func TestProfileRoundTrip(t *testing.T) {
	spec := map[string]any{
		"hard":  map[string]any{"limits.cpu": "4"},
		"extra": map[string]any{"nested": map[string]any{"list": []any{"a", map[string]any{"deep": true}}, "n": int64(3)}},
	}
	for _, version := range []string{"v1", "v1beta1"} {
		t.Run(version, func(t *testing.T) {
			name := "roundtrip-" + version
			in := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "kubeflow.org/" + version,
				"kind":       "Profile",
				"metadata":   map[string]any{"name": name},
				"spec": map[string]any{
					"owner":             map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice@example.org"},
					"plugins":           []any{map[string]any{"kind": "quotas", "apiVersion": "kubeflow.org/v1alpha1", "spec": spec}},
					"resourceQuotaSpec": map[string]any{"hard": map[string]any{"pods": "10"}},
				},
			}}
			if err := env.Client.Create(t.Context(), in); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), in) }) //nolint:forbidigo // cleanups run after t.Context is canceled
			for _, readAs := range []string{"v1", "v1beta1"} {
				out := &unstructured.Unstructured{}
				out.SetGroupVersionKind(schema.GroupVersionKind{Group: "kubeflow.org", Version: readAs, Kind: "Profile"})
				if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, out); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(normalize(t, in.Object["spec"]), normalize(t, out.Object["spec"])); diff != "" {
					t.Errorf("written as %s, read as %s (-want +got):\n%s", version, readAs, diff)
				}
			}
		})
	}
}

func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
