package plugins

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOvertaken(t *testing.T) {
	const manager = "profilekit-rbac"
	desired := `{"metadata":{"name":"b","labels":{"app.kubernetes.io/managed-by":"profilekit"}},
		"roleRef":{"kind":"ClusterRole","name":"view"},
		"subjects":[{"kind":"Group","name":"g"}],
		"spec":{"env":[{"name":"A","value":"1"}]}}`
	ours := `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{}}},"f:roleRef":{},"f:subjects":{},
		"f:spec":{"f:env":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:value":{}}}}}`
	oursWithoutSubjects := `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{}}},"f:roleRef":{}}`
	entry := func(m string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: m, Operation: op, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	apply := func(fields string) metav1.ManagedFieldsEntry {
		return entry(manager, metav1.ManagedFieldsOperationApply, fields)
	}
	edit := func(fields string) metav1.ManagedFieldsEntry {
		return entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, fields)
	}
	tests := []struct {
		reason  string
		entries []metav1.ManagedFieldsEntry
		want    bool
	}{{
		reason: "no managed fields (stripped by a cache) tell nothing",
		want:   false,
	}, {
		reason:  "only our own entry",
		entries: []metav1.ManagedFieldsEntry{apply(ours)},
		want:    false,
	}, {
		reason:  "another manager added a label we do not set",
		entries: []metav1.ManagedFieldsEntry{apply(ours), edit(`{"f:metadata":{"f:labels":{"f:team":{}}}}`)},
		want:    false,
	}, {
		reason:  "another manager took an atomic list we set (an added subject)",
		entries: []metav1.ManagedFieldsEntry{apply(oursWithoutSubjects), edit(`{"f:subjects":{}}`)},
		want:    true,
	}, {
		reason:  "another manager applied the same list: shared, not taken",
		entries: []metav1.ManagedFieldsEntry{apply(ours), entry("gitops", metav1.ManagedFieldsOperationApply, `{"f:subjects":{}}`)},
		want:    false,
	}, {
		reason:  "another manager's item in a keyed list is theirs to keep",
		entries: []metav1.ManagedFieldsEntry{apply(ours), edit(`{"f:spec":{"f:env":{"k:{\"name\":\"B\"}":{".":{},"f:name":{},"f:value":{}}}}}`)},
		want:    false,
	}, {
		reason:  "our entry alone tells a list was taken (a cache that drops the others' entries)",
		entries: []metav1.ManagedFieldsEntry{apply(oursWithoutSubjects)},
		want:    true,
	}, {
		reason:  "an entry of another subresource does not make a field ours",
		entries: []metav1.ManagedFieldsEntry{apply(oursWithoutSubjects), {Manager: manager, Operation: metav1.ManagedFieldsOperationApply, Subresource: "status", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:subjects":{}}`)}}},
		want:    true,
	}, {
		reason:  "our entry is gone",
		entries: []metav1.ManagedFieldsEntry{edit(`{"f:metadata":{"f:labels":{"f:team":{}}}}`)},
		want:    true,
	}}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			var obj map[string]any
			if err := json.Unmarshal([]byte(desired), &obj); err != nil {
				t.Fatal(err)
			}
			want := &unstructured.Unstructured{Object: obj}
			live := want.DeepCopy()
			live.SetManagedFields(tc.entries)
			if got := overtaken(live, want, manager); got != tc.want {
				t.Errorf("overtaken = %v, want %v", got, tc.want)
			}
		})
	}
}
