package reconcilers_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestRequestsTimeOut sends every kind of request a reconcile makes to a
// server that never answers: each returns within its timeout, so that no
// input can hold a worker.
func TestRequestsTimeOut(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); srv.Close() })

	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper.Add(kubeflowv1.GroupVersion.WithKind("Profile"), meta.RESTScopeRoot)
	c, err := client.New(&rest.Config{Host: srv.URL, Dial: (&net.Dialer{}).DialContext}, client.Options{Scheme: env.Scheme, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 300 * time.Millisecond
	tc := reconcilers.WithTimeout(c, timeout)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b"}}
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	for _, tt := range []struct {
		reason string
		call   func(ctx context.Context) error
	}{
		{"get", func(ctx context.Context) error {
			return tc.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		}},
		{"list", func(ctx context.Context) error { return tc.List(ctx, &corev1.ConfigMapList{}) }},
		{"create", func(ctx context.Context) error { return tc.Create(ctx, cm.DeepCopy()) }},
		{"update", func(ctx context.Context) error { return tc.Update(ctx, cm.DeepCopy()) }},
		{"patch", func(ctx context.Context) error { return tc.Patch(ctx, cm.DeepCopy(), client.MergeFrom(cm)) }},
		{"delete", func(ctx context.Context) error { return tc.Delete(ctx, cm.DeepCopy()) }},
		{"server-side apply", func(ctx context.Context) error {
			return tc.Apply(ctx, corev1ac.ConfigMap("b", "a").WithData(map[string]string{"k": "v"}), client.FieldOwner("test"))
		}},
		{"status update", func(ctx context.Context) error { return tc.Status().Update(ctx, p.DeepCopy()) }},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			start := time.Now()
			err := tt.call(t.Context())
			took := time.Since(start)
			if err == nil {
				t.Fatal("a request to a server that never answers succeeded")
			}
			if took > timeout+2*time.Second {
				t.Errorf("returned after %s, want about %s", took, timeout)
			}
			if !errors.Is(err, context.DeadlineExceeded) && took < timeout {
				t.Errorf("failed after %s without reaching the timeout: %v", took, err)
			}
		})
	}
}
