package apply

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
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
			ours, known := ownFields(live.GetManagedFields(), manager)
			if got := overtaken(ours, known, want); got != tc.want {
				t.Errorf("overtaken = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDecodedSetsAreBoundedAndFaithful(t *testing.T) {
	var m setMemo
	raw := func(i int) []byte { return []byte(fmt.Sprintf(`{"f:metadata":{"f:name":{}},"f:n%d":{}}`, i)) }
	for i := range maxDecodedSets + 50 {
		got := m.decode(raw(i))
		if _, ok := got[fmt.Sprintf("f:n%d", i)]; !ok || len(got) != 2 {
			t.Fatalf("set %d decoded as %v", i, got)
		}
	}
	if n := m.n.Load(); n != maxDecodedSets {
		t.Errorf("memo holds %d sets, want the bound %d", n, maxDecodedSets)
	}
	// A set decoded past the bound is decoded again, and still right.
	again := m.decode(raw(maxDecodedSets + 10))
	if _, ok := again[fmt.Sprintf("f:n%d", maxDecodedSets+10)]; !ok {
		t.Errorf("set past the bound decoded as %v", again)
	}
	first, second := m.decode(raw(3)), m.decode(raw(3))
	if fmt.Sprintf("%p", first) != fmt.Sprintf("%p", second) {
		t.Error("a set within the bound was decoded twice, not kept")
	}
	if got := m.decode([]byte(`not json`)); len(got) != 0 {
		t.Errorf("an unreadable set decoded as %v, want empty", got)
	}
}

func TestOwnerReferenceFieldsAreTheApplyConfigurations(t *testing.T) {
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "0f0e-uid"}}
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(plugins.OwnerReference(p))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, ownerReferenceFields(p)); diff != "" {
		t.Errorf("owner reference fields differ from the apply configuration's (-want +got):\n%s", diff)
	}
}
