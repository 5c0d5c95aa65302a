package plugins_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// A typed read that comes back without its kind (as uncached reads do) must
// still be recognised as unchanged.
func TestSyncUnchangedWhenReadsLoseTheKind(t *testing.T) {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "u1"}}
	owns := []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")}
	want := corev1ac.ConfigMap("settings", "team").WithData(map[string]string{"a": "b"})

	// The fake client's apply stores the object; the interceptor then strips
	// the kind from every typed read.
	base := fake.NewClientBuilder().WithScheme(s).Build()
	c := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if _, typed := obj.(*corev1.ConfigMap); typed {
				obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			}
			return err
		},
	})
	first, err := plugins.NewApplier(c, "settings", p, owns, plugins.WithScheme(s)).Sync(context.Background(), want)
	if err != nil {
		t.Fatal(err)
	}
	if first.Count(plugins.Created) != 1 {
		t.Fatalf("first Sync = %s, want 1 created", first.Summary())
	}
	second, err := plugins.NewApplier(c, "settings", p, owns, plugins.WithScheme(s)).Sync(context.Background(), want)
	if err != nil {
		t.Fatal(err)
	}
	if second.Count(plugins.Unchanged) != 1 {
		t.Errorf("second Sync = %s, want 1 unchanged", second.Summary())
	}
}

// Objects stay in the Profile's namespace unless the plugin may write
// elsewhere, and pruning looks only where the plugin may write.
func TestSyncNamespaceScope(t *testing.T) {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "u1"}}
	owns := []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")}
	elsewhere := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "left", Namespace: "shared", Labels: plugins.OwnershipLabels("settings", "team")}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(elsewhere).Build()

	_, err := plugins.NewApplier(c, "settings", p, owns).Sync(context.Background(), corev1ac.ConfigMap("x", "shared"))
	if err == nil || !strings.Contains(err.Error(), `ConfigMap shared/x is outside the Profile's namespace team`) {
		t.Errorf("Sync into another namespace: error %v, want it refused", err)
	}
	res, err := plugins.NewApplier(c, "settings", p, owns).Sync(context.Background())
	if err != nil || res.Count(plugins.Deleted) != 0 {
		t.Errorf("Sync within the namespace = %s, %v; want the object in another namespace left alone", res.Summary(), err)
	}
	res, err = plugins.NewApplier(c, "settings", p, owns, plugins.WithAnyNamespace()).Sync(context.Background())
	if err != nil || res.Count(plugins.Deleted) != 1 {
		t.Errorf("Sync in any namespace = %s, %v; want the stale object in another namespace deleted", res.Summary(), err)
	}
}
