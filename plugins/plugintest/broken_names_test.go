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

// overwriting writes its ConfigMap with an update when one of its name is
// there, whoever made it: a tenant's object of that name becomes its own.
func overwriting() plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "overwriting",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: plugins.Namespace(req.Profile), Name: "settings",
					Labels: maps.Clone(plugins.OwnershipLabels("overwriting", req.Profile.Name))}, Data: map[string]string{"k": "v"}}
				var live corev1.ConfigMap
				err := req.Live.Get(ctx, client.ObjectKeyFromObject(want), &live)
				switch {
				case apierrors.IsNotFound(err):
					return plugins.Result{}, req.Client.Create(ctx, want)
				case err != nil:
					return plugins.Result{}, err
				case live.Labels[plugins.LabelPlugin] == "overwriting" && live.Data["k"] == "v":
					return plugins.Result{}, nil
				}
				want.ResourceVersion = live.ResourceVersion
				return plugins.Result{}, req.Client.Update(ctx, want)
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				return req.Objects.DeleteAll(ctx)
			},
		},
		Owns: []schema.GroupVersionKind{configMaps},
	}
}

// keyed keeps, in store, an item per namespace that it never takes away:
// a removed plugin leaves its outside grant.
func keyed(s *store) plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "keyed",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				ns := plugins.Namespace(req.Profile)
				_, err := req.Outside.EnsureAhead(ctx, "Store", "item", 1, func(context.Context) error {
					s.add(ns, "item")
					return nil
				})
				return plugins.Result{}, err
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				return plugins.Result{}, req.Outside.Forget(ctx, "item")
			},
		},
		OutsideState: true,
	}
}

// TestHarnessSeesWhatIsNotItsOwn: the taken plans flag a plugin that
// writes over a tenant's object of the name it wants, and the check after
// a removal flags an outside grant the plugin never takes away.
func TestHarnessSeesWhatIsNotItsOwn(t *testing.T) {
	h := plugintest.Harness{Client: env.Client}
	st := &store{}
	for _, tt := range []struct {
		name string
		run  func(plugintest.T, plugintest.Scenario) plugintest.Plans
		sc   plugintest.Scenario
		want string
	}{
		{"someone else's object", h.TakenNames, plugintest.Scenario{Def: overwriting(), Steps: brokenSteps},
			"safety: update of someone else's ConfigMap <profile>/settings"},
		{"an outside grant kept", h.CrashAfterEveryWrite, plugintest.Scenario{Def: keyed(st), Steps: brokenSteps, Observe: st.observe,
			Grants: func(_ context.Context, ns string) ([]string, error) {
				seen, err := st.observe(t.Context(), ns)
				if seen["items"] == "0" {
					return nil, err
				}
				return []string{"items " + seen["items"]}, err
			}},
			"left behind: the removed plugin keeps what it should have let go:\n\tobserved items outlives the plugin's removal\n\toutside grant items 1 outlives the plugin's removal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &spy{T: t}
			plans := tt.run(s, tt.sc)
			if plans.Failed == 0 || len(s.errors) == 0 {
				t.Fatalf("plans of %s: %d run, none failed; the harness did not see the bug", tt.sc.Def.Kind(), plans.Run)
			}
			if all := strings.Join(s.errors, "\n"); !strings.Contains(all, tt.want) {
				t.Errorf("no finding says %q:\n%s", tt.want, all)
			}
			t.Logf("%s: %d of %d plans failed; first finding:\n%s", tt.sc.Def.Kind(), plans.Failed, plans.Run, s.errors[0])
		})
	}
}
