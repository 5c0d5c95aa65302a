package plugintest_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// markingAfter writes its data, then a marker that says the data is made,
// and takes the data back only where it finds the marker: a host that
// stops between the two writes, and restarts into a Profile that moved on
// (the plugin removed), leaves the data for good. A restart into the same
// step writes the marker, and the removal that follows finds it.
func markingAfter(trustMarker bool) plugins.Definition {
	cm := func(req plugins.Request, name string) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap(name, plugins.Namespace(req.Profile)).
			WithLabels(maps.Clone(plugins.OwnershipLabels("markingafter", req.Profile.Name)))
	}
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "markingafter",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				res, err := req.Objects.Apply(ctx, cm(req, "data"))
				if err != nil {
					return res, err
				}
				return req.Objects.Apply(ctx, cm(req, "made"))
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				if trustMarker {
					err := req.Client.Get(ctx, client.ObjectKey{Namespace: plugins.Namespace(req.Profile), Name: "made"}, &corev1.ConfigMap{})
					if apierrors.IsNotFound(err) {
						return plugins.Result{}, nil
					}
					if err != nil {
						return plugins.Result{}, err
					}
				}
				return req.Objects.DeleteAll(ctx)
			},
		},
		Owns: []schema.GroupVersionKind{configMaps},
	}
}

// TestHarnessSeesAProfileThatMovedOn: the moved-on plans flag the revoke
// that trusts a marker written after what it marks, which the plans that
// restart into the same step never see, and pass the one that takes back
// whatever is its own.
func TestHarnessSeesAProfileThatMovedOn(t *testing.T) {
	h := plugintest.Harness{Client: env.Client}
	for _, tt := range []struct {
		name        string
		trustMarker bool
		want        string
	}{
		{"trusting the marker", true, "ConfigMap <profile>/data"},
		{"taking back its own", false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc := plugintest.Scenario{Def: markingAfter(tt.trustMarker), Steps: brokenSteps}
			if plans := h.CrashAfterEveryWrite(&spy{T: t}, sc); plans.Failed > 0 {
				t.Fatalf("%d of %d crash plans failed: only a Profile that moved on shows this bug", plans.Failed, plans.Run)
			}
			s := &spy{T: t}
			plans := h.CrashThenMoveOn(s, sc)
			if tt.want == "" {
				if plans.Failed > 0 || len(s.errors) > 0 {
					t.Errorf("%d of %d moved-on plans failed for a revoke that takes back its own:\n%s", plans.Failed, plans.Run, strings.Join(s.errors, "\n"))
				}
				return
			}
			if plans.Failed == 0 || len(s.errors) == 0 {
				t.Fatalf("moved-on plans: %d run, none failed; the harness did not see the data left", plans.Run)
			}
			if all := strings.Join(s.errors, "\n"); !strings.Contains(all, tt.want) {
				t.Errorf("no finding names %q:\n%s", tt.want, all)
			}
			t.Logf("%d of %d plans failed; first finding:\n%s", plans.Failed, plans.Run, s.errors[0])
		})
	}
}
