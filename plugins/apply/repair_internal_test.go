package apply

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestLastWriter(t *testing.T) {
	at := func(sec int) *metav1.Time { return &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC)} }
	entry := func(manager string, when *metav1.Time, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Time: when, FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	const (
		rules       = `{"f:spec":{"f:rules":{}}}`
		annotations = `{"f:metadata":{"f:annotations":{"f:user":{}}}}`
	)
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
		"metadata": map[string]any{"name": "p", "namespace": "n", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"rules": []any{map[string]any{}}},
	}}
	ours := metav1.ManagedFieldsEntry{Manager: "profilekit-core", Operation: metav1.ManagedFieldsOperationApply, Time: at(9), FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:a":{}}}}`)}}
	status := metav1.ManagedFieldsEntry{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(9), Subresource: "status", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}}
	for _, tc := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		{name: "none but ours", entries: []metav1.ManagedFieldsEntry{ours, status}, want: "unknown"},
		{name: "the latest of two that took our fields", entries: []metav1.ManagedFieldsEntry{entry("creator", at(1), rules), entry("other", at(5), rules), ours}, want: "other"},
		{name: "the latest, when none took one", entries: []metav1.ManagedFieldsEntry{entry("creator", at(1), annotations), entry("other", at(5), annotations), ours}, want: "other"},
		{name: "in one second, the one that took our field", entries: []metav1.ManagedFieldsEntry{entry("creator", at(5), annotations), entry("upstream", at(5), rules), ours}, want: "upstream"},
		{name: "in one second, listed first", entries: []metav1.ManagedFieldsEntry{entry("upstream", at(5), rules), entry("creator", at(5), annotations), ours}, want: "upstream"},
		{name: "a co-owner of our field is not who took one", entries: []metav1.ManagedFieldsEntry{entry("creator", at(5), `{"f:metadata":{"f:labels":{"f:a":{}}}}`), entry("upstream", at(5), rules), ours}, want: "upstream"},
		{name: "the one that took our field, though another wrote later", entries: []metav1.ManagedFieldsEntry{entry("upstream", at(5), rules), entry("creator", at(7), annotations), ours}, want: "upstream"},
		{name: "no time", entries: []metav1.ManagedFieldsEntry{entry("old", nil, rules)}, want: "old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lastWriter(tc.entries, "profilekit-core", desired); got != tc.want {
				t.Errorf("lastWriter = %q, want %q", got, tc.want)
			}
		})
	}
}
