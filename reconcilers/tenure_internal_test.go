package reconcilers

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/outside"
)

// TestRevokeWaitsWhenTheTenureCannotBeRead: with the API server out of
// reach during a deletion, a Revoke neither runs (it could drop what the
// name's holder keeps) nor counts as done (the Profile would go with its
// grants in place): the error is returned, and retried.
func TestRevokeWaitsWhenTheTenureCannotBeRead(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	down := errors.New("connection refused")
	c := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.ConfigMap); ok {
				return down
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "u1"},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"}}}
	ok, err := revokesUnderTenure(t.Context(), &outside.Tenures{Reader: c, Writer: c}, p)
	if ok || !errors.Is(err, down) {
		t.Errorf("revokesUnderTenure with the API server down = %v, %v; want false and the error", ok, err)
	}
	if err := holdTenure(t.Context(), &outside.Tenures{Reader: c, Writer: c}, p); !errors.Is(err, down) {
		t.Errorf("holdTenure with the API server down = %v; want the error (no pass runs)", err)
	}
}
