package plugintest_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// spy is a test that records the harness's findings instead of failing.
type spy struct {
	*testing.T
	mu     sync.Mutex
	errors []string
}

func (s *spy) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors = append(s.errors, fmt.Sprintf(format, args...))
}

var configMaps = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// brokenSteps make the Profile and remove the plugin.
var brokenSteps = []plugintest.Step{{Name: "create"}, {Name: "remove", Remove: true}}

// halfDone writes its config ConfigMap and then its data ConfigMap, and
// writes the data only in a pass that made the config: a pass that finds
// the config takes the job for done. A host that stops between the two
// writes leaves a Profile without its data for good.
func halfDone() plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "halfdone",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				err := req.Client.Get(ctx, client.ObjectKey{Namespace: plugins.Namespace(req.Profile), Name: "config"}, &corev1.ConfigMap{})
				if err == nil || !apierrors.IsNotFound(err) {
					return plugins.Result{}, err
				}
				res, err := req.Objects.Apply(ctx, corev1ac.ConfigMap("config", plugins.Namespace(req.Profile)))
				if err != nil {
					return res, err
				}
				more, err := req.Objects.Apply(ctx, corev1ac.ConfigMap("data", plugins.Namespace(req.Profile)).WithData(map[string]string{"k": "v"}))
				res.Merge(more)
				return res, err
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				return req.Objects.DeleteAll(ctx)
			},
		},
		Owns: []schema.GroupVersionKind{configMaps},
	}
}

// renaming takes an object of its name that its cache does not show for
// someone else's and writes its data under another name: a pass that
// decides from a cache behind its own write makes a second copy, which
// stays.
func renaming() plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "renaming",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				ns := plugins.Namespace(req.Profile)
				err := req.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, &corev1.ConfigMap{})
				if err == nil || !apierrors.IsNotFound(err) {
					return plugins.Result{}, err
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data",
					Labels: maps.Clone(plugins.OwnershipLabels("renaming", req.Profile.Name))}}
				err = req.Client.Create(ctx, cm)
				if apierrors.IsAlreadyExists(err) {
					cm.Name, cm.ResourceVersion = "data-2", ""
					err = req.Client.Create(ctx, cm)
				}
				return plugins.Result{}, client.IgnoreAlreadyExists(err)
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				return req.Objects.DeleteAll(ctx)
			},
		},
		Owns: []schema.GroupVersionKind{configMaps},
	}
}

// restless writes its config and then its data; a pass that finds the
// config without the data stamps the config with the time instead of
// writing the data. A host that stops between the two writes rewrites the
// config on every resync from then on.
func restless() plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "restless",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				ns := plugins.Namespace(req.Profile)
				err := req.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "config"}, &corev1.ConfigMap{})
				if err == nil {
					if err := req.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
						return plugins.Result{}, err
					}
					return req.Objects.Apply(ctx, corev1ac.ConfigMap("config", ns).WithData(map[string]string{"stamp": time.Now().String()}))
				}
				if !apierrors.IsNotFound(err) {
					return plugins.Result{}, err
				}
				res, err := req.Objects.Apply(ctx, corev1ac.ConfigMap("config", ns))
				if err != nil {
					return res, err
				}
				more, err := req.Objects.Apply(ctx, corev1ac.ConfigMap("data", ns))
				res.Merge(more)
				return res, err
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				return req.Objects.DeleteAll(ctx)
			},
		},
		Owns: []schema.GroupVersionKind{configMaps},
	}
}

// TestHarnessSeesBrokenPlugins: each pattern flags the plugin broken for
// it, with the plan that shows it, and passes the other.
func TestHarnessSeesBrokenPlugins(t *testing.T) {
	h := plugintest.Harness{Client: env.Client}
	for _, tt := range []struct {
		pattern string
		run     func(plugintest.T, plugintest.Scenario) plugintest.Plans
		broken  plugins.Definition
		want    string
	}{
		{"crash", h.CrashAfterEveryWrite, halfDone(), "liveness"},
		{"stale", h.StaleAtEveryWrite, renaming(), "safety"},
		{"crash", h.CrashAfterEveryWrite, restless(), "not quiet after 6 passes"},
	} {
		t.Run(tt.pattern+"/"+tt.broken.Kind(), func(t *testing.T) {
			s := &spy{T: t}
			plans := tt.run(s, plugintest.Scenario{Def: tt.broken, Steps: brokenSteps})
			if plans.Failed == 0 || len(s.errors) == 0 {
				t.Fatalf("%s plans of %s: %d run, none failed; the harness did not see the bug", tt.pattern, tt.broken.Kind(), plans.Run)
			}
			if !strings.Contains(strings.Join(s.errors, "\n"), tt.want) {
				t.Errorf("findings name no %s violation:\n%s", tt.want, strings.Join(s.errors, "\n"))
			}
			t.Logf("%s: %d of %d plans failed; first finding:\n%s", tt.broken.Kind(), plans.Failed, plans.Run, s.errors[0])
		})
	}
}

// store is an outside system that holds named items, per namespace.
type store struct {
	mu    sync.Mutex
	items map[string][]string
}

func (s *store) add(namespace, item string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items == nil {
		s.items = map[string][]string{}
	}
	s.items[namespace] = append(s.items[namespace], item)
}

func (s *store) observe(_ context.Context, namespace string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]string{"items": fmt.Sprint(len(s.items[namespace]))}, nil
}

// doubling adds an item to the store in a call that is not idempotent: a
// call made whose answer was lost is made again, and the store holds two.
func doubling(s *store) plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "doubling",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				ns := plugins.Namespace(req.Profile)
				_, err := req.Outside.Ensure(ctx, "Store", "item", 1, func(context.Context) error {
					s.add(ns, "item")
					return nil
				})
				return plugins.Result{}, err
			},
		},
		OutsideState: true,
	}
}

// trusting records its item before the call and takes a recorded item for
// made: a call refused after the record never happens.
func trusting(s *store) plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "trusting",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				ns := plugins.Namespace(req.Profile)
				recorded, err := req.Outside.Recorded(ctx)
				if err != nil || len(recorded) > 0 {
					return plugins.Result{}, err
				}
				if err := req.Outside.Intend(ctx, "item"); err != nil {
					return plugins.Result{}, err
				}
				return plugins.Result{}, req.Outside.Call(ctx, "Store", func(context.Context) error {
					s.add(ns, "item")
					return nil
				})
			},
		},
		OutsideState: true,
	}
}

// TestHarnessSeesBrokenOutsideCalls: a lost answer makes the
// non-idempotent call twice, and a refused call never happens for the
// plugin that trusts its record over the system.
func TestHarnessSeesBrokenOutsideCalls(t *testing.T) {
	h := plugintest.Harness{Client: env.Client}
	for _, tt := range []struct {
		pattern string
		run     func(plugintest.T, plugintest.Scenario) plugintest.Plans
		broken  func(*store) plugins.Definition
	}{
		{"lost", h.LoseEveryOutsideAnswer, doubling},
		{"refused", h.FailEveryOutsideCall, trusting},
	} {
		t.Run(tt.pattern, func(t *testing.T) {
			st := &store{}
			s := &spy{T: t}
			def := tt.broken(st)
			plans := tt.run(s, plugintest.Scenario{Def: def, Steps: []plugintest.Step{{Name: "create"}}, Observe: st.observe})
			if plans.Failed == 0 || len(s.errors) == 0 {
				t.Fatalf("%s plans of %s: %d run, none failed; the harness did not see the bug", tt.pattern, def.Kind(), plans.Run)
			}
			if !strings.Contains(s.errors[0], "liveness") || !strings.Contains(s.errors[0], "observed items") {
				t.Errorf("the finding names no liveness violation of the store:\n%s", s.errors[0])
			}
			t.Logf("%s: %d of %d plans failed; first finding:\n%s", def.Kind(), plans.Failed, plans.Run, s.errors[0])
		})
	}
}
