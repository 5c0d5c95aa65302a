package apply_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// The Applier reads its objects from the host's cache without copying what
// a typed object's fields point to, and takes the managed fields off what
// it read: the cache's objects must come out of a pass as they went in,
// typed, metadata only or unstructured, or the next pass would find our
// managed fields gone and every other reader a changed object.
func TestPassesLeaveTheCacheAsItWas(t *testing.T) {
	for _, c := range []struct {
		name string
		opts func(s *runtime.Scheme, owns ...schema.GroupVersionKind) []apply.Option
	}{
		{"typed", func(s *runtime.Scheme, _ ...schema.GroupVersionKind) []apply.Option {
			return []apply.Option{apply.WithScheme(s)}
		}},
		{"metadata only", func(s *runtime.Scheme, owns ...schema.GroupVersionKind) []apply.Option {
			return []apply.Option{apply.WithScheme(s), apply.WithMetadataOnly(owns...)}
		}},
		{"unstructured", func(*runtime.Scheme, ...schema.GroupVersionKind) []apply.Option { return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			const ns, kind = "cache-kept", "keeper"
			srv := startCachedServer(t, ns)
			ctx := t.Context()
			p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: ns, UID: "p1"}}
			gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
			desired := corev1ac.ConfigMap("settings", ns).WithLabels(map[string]string{"tier": "a"}).WithData(map[string]string{"mode": "on"})
			sync := func() plugins.Result {
				t.Helper()
				a := apply.New(srv.client, kind, p, []schema.GroupVersionKind{gvk}, c.opts(srv.env.Scheme, gvk)...)
				res, err := a.Sync(ctx, desired)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			if res := sync(); res.Count(plugins.Created) != 1 {
				t.Fatalf("first pass: %s, want 1 created", res.Summary())
			}
			// The cache's own objects, as the cache holds them: a read
			// without a copy shares their maps and lists.
			key := client.ObjectKey{Namespace: ns, Name: "settings"}
			cached := func() (*corev1.ConfigMap, *metav1.PartialObjectMetadata, *unstructured.Unstructured, error) {
				typed, meta, u := &corev1.ConfigMap{}, apply.NewMetadata(gvk), &unstructured.Unstructured{}
				u.SetGroupVersionKind(gvk)
				for _, obj := range []client.Object{typed, meta, u} {
					if err := srv.informers.Get(ctx, key, obj, client.UnsafeDisableDeepCopy); err != nil {
						return nil, nil, nil, err
					}
				}
				return typed, meta, u, nil
			}
			testhost.Eventually(t, 10*time.Second, func() (bool, string) {
				_, _, _, err := cached()
				return err == nil, fmt.Sprint(err)
			})
			typed, meta, u, _ := cached()
			typedBefore, metaBefore, uBefore := typed.DeepCopy(), meta.DeepCopy(), u.DeepCopy()
			if len(typed.ManagedFields) == 0 || len(meta.ManagedFields) == 0 || len(u.GetManagedFields()) == 0 {
				t.Fatalf("the cache holds no managed fields: typed %v, metadata %v, unstructured %v", typed.ManagedFields, meta.ManagedFields, u.GetManagedFields())
			}
			for range 3 {
				if res := sync(); res.Count(plugins.Unchanged) != 1 {
					t.Fatalf("pass in sync: %s, want 1 unchanged", res.Summary())
				}
			}
			typed, meta, u, _ = cached()
			if diff := cmp.Diff(typedBefore, typed); diff != "" {
				t.Errorf("the cache's typed ConfigMap after three passes (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(metaBefore, meta); diff != "" {
				t.Errorf("the cache's ConfigMap metadata after three passes (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(uBefore.Object, u.Object); diff != "" {
				t.Errorf("the cache's unstructured ConfigMap after three passes (-before +after):\n%s", diff)
			}
		})
	}
}
