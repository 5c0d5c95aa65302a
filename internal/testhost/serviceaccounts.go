package testhost

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateServiceAccount makes a service account the way the core plugin or
// the upstream controller would (default-editor, say), with annotations set
// by hand beside whatever a plugin adds.
func CreateServiceAccount(t *testing.T, c client.Client, namespace, name string, annotations map[string]string) *corev1.ServiceAccount {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations}}
	if err := c.Create(context.Background(), sa); err != nil {
		t.Fatalf("create service account %s/%s: %v", namespace, name, err)
	}
	return sa
}

// WaitServiceAccount waits until check accepts the named service account
// and returns it.
func WaitServiceAccount(t *testing.T, c client.Client, namespace, name string, check func(*corev1.ServiceAccount) (bool, string)) *corev1.ServiceAccount {
	t.Helper()
	var got corev1.ServiceAccount
	Eventually(t, 20*time.Second, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &got); err != nil {
			return false, err.Error()
		}
		return check(&got)
	})
	return &got
}

// FieldsOf returns the operations and fields that manager owns on obj, such
// as ["Apply {\"f:metadata\":...}"].
func FieldsOf(obj metav1.Object, manager string) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.FieldsV1 != nil {
			out = append(out, fmt.Sprintf("%s %s", mf.Operation, mf.FieldsV1.Raw))
		}
	}
	slices.Sort(out)
	return out
}

// MockReporter reports go.uber.org/mock failures from any goroutine (plugins
// call their mocks from controller workers, where t.Fatal must not run): a
// failure, an unexpected call included, fails the test and the call returns
// zero values.
type MockReporter struct {
	T  *testing.T
	mu sync.Mutex
}

// Errorf fails the test.
func (r *MockReporter) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.T.Errorf(format, args...)
}

// Fatalf fails the test without stopping the calling goroutine.
func (r *MockReporter) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

// Helper marks the caller as a helper.
func (r *MockReporter) Helper() { r.T.Helper() }
