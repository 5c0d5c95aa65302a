package diff

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestMergeRemovesDroppedFields checks the local merge against what the API
// server does: a field our manager applied before and no longer applies is
// removed, one another manager also owns stays, and the rest is kept.
func TestMergeRemovesDroppedFields(t *testing.T) {
	live := object(t, `
apiVersion: v1
kind: ResourceQuota
metadata:
  name: q
  namespace: team-a
  managedFields:
  - manager: profilekit-quotas
    operation: Apply
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:hard": {"f:limits.cpu": {}, "f:requests.memory": {}, "f:pods": {}}}}
  - manager: kubectl
    operation: Apply
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:hard": {"f:pods": {}}}}
spec:
  hard: {limits.cpu: "2", requests.memory: 4Gi, pods: "10"}
`)
	applied := object(t, `
apiVersion: v1
kind: ResourceQuota
metadata: {name: q, namespace: team-a}
spec:
  hard: {limits.cpu: "4"}
`)
	got, err := newMerger().apply(live, applied, "profilekit-quotas", true)
	if err != nil {
		t.Fatal(err)
	}
	hard, _, _ := unstructured.NestedMap(got.Object, "spec", "hard")
	want := map[string]any{"limits.cpu": "4", "pods": "10"}
	if diff := cmp.Diff(want, hard); diff != "" {
		t.Errorf("spec.hard after the apply (-want +got):\n%s", diff)
	}
}
