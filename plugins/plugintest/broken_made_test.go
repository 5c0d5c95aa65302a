package plugintest_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// replacing keeps the tenant's data in a ConfigMap and takes one that its
// cache does not show for a leftover in its way: it deletes it and makes
// its own. A pass that decides from a cache behind the pass before it
// deletes the data that pass made moments ago and makes it again: it ends
// right, and what the tenant wrote in between is gone.
func replacing() plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "replacing",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				key := client.ObjectKey{Namespace: plugins.Namespace(req.Profile), Name: "data"}
				if err := req.Client.Get(ctx, key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
					return plugins.Result{}, err
				}
				var leftover corev1.ConfigMap
				switch err := req.Live.Get(ctx, key, &leftover); {
				case err == nil:
					if err := req.Client.Delete(ctx, &leftover); client.IgnoreNotFound(err) != nil {
						return plugins.Result{}, err
					}
				case !apierrors.IsNotFound(err):
					return plugins.Result{}, err
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
					Labels: maps.Clone(plugins.OwnershipLabels("replacing", req.Profile.Name))}}
				return plugins.Result{}, req.Client.Create(ctx, cm)
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				return req.Objects.DeleteAll(ctx)
			},
		},
		Owns: []schema.GroupVersionKind{configMaps},
	}
}

// TestHarnessSeesDataMadeDuringThePlan: user data is protected from the
// moment it exists, not only when it was there as the step began. The
// data the first pass of a step makes, a stale pass deletes and makes
// again; nothing differs at the end.
func TestHarnessSeesDataMadeDuringThePlan(t *testing.T) {
	h := plugintest.Harness{Client: env.Client}
	sc := plugintest.Scenario{Def: replacing(), Data: dataUID, Steps: brokenSteps}
	s := &spy{T: t}
	plans := h.StaleAtEveryWrite(s, sc)
	if plans.Failed == 0 || len(s.errors) == 0 {
		t.Fatalf("stale plans of %s: %d run, none failed; the harness did not see the data made again", sc.Def.Kind(), plans.Run)
	}
	const want = "safety: user data: data was deleted, which the step keeps"
	if all := strings.Join(s.errors, "\n"); !strings.Contains(all, want) {
		t.Errorf("no finding says %q:\n%s", want, all)
	}
	t.Logf("%s: %d of %d plans failed; first finding:\n%s", sc.Def.Kind(), plans.Failed, plans.Run, s.errors[0])
}
