package apply_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// A kind the plugin owns that the API server does not serve (one a host's
// config names before its CRD is installed) holds nothing to prune: Sync
// prunes the other kinds and fails on none.
func TestPruneSkipsAKindTheServerDoesNotServe(t *testing.T) {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "u1"}}
	monitors := schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}
	owns := []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap"), monitors}
	stale := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stale", Namespace: "team", Labels: plugins.OwnershipLabels("templates", "team")}}
	listed := 0
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(s).WithObjects(stale).Build(), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if ul, ok := list.(*unstructured.UnstructuredList); ok && ul.GroupVersionKind().Kind == monitors.Kind+"List" {
				listed++
				return &meta.NoKindMatchError{GroupKind: monitors.GroupKind(), SearchedVersions: []string{monitors.Version}}
			}
			return c.List(ctx, list, opts...)
		},
	})
	res, err := apply.New(c, "templates", p, owns, apply.WithScheme(s)).Sync(t.Context())
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if listed != 1 || res.Count(plugins.Deleted) != 1 {
		t.Errorf("Sync = %s after %d lists of the unserved kind; want the stale ConfigMap deleted after one", res.Summary(), listed)
	}
}
