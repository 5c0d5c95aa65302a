package reconcilers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
)

var profilesGVR = schema.GroupVersionResource{Group: kubeflowv1.GroupVersion.Group, Version: "v1", Resource: "profiles"}

// waitFor does what `kubectl wait --for=condition=<t>=<status> profile/<name>`
// does: list and watch the one Profile by a field selector until its
// condition of type t has the status, and returns the Profile as seen then.
func waitFor(t *testing.T, name, condType, status string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	dc, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return dc.Resource(profilesGVR).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return dc.Resource(profilesGVR).Watch(ctx, o)
		},
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	last := "no event"
	ev, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, nil, func(e watch.Event) (bool, error) {
		u, ok := e.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		last = fmt.Sprint(conds)
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == condType {
				return m["status"] == status, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("condition %s=%s on profile/%s: %v; last conditions %s", condType, status, name, err, last)
	}
	return ev.Object.(*unstructured.Unstructured)
}

// condition returns the condition of type t of a Profile read as unstructured.
func condition(t *testing.T, u *unstructured.Unstructured, condType string) kubeflowv1.ProfileCondition {
	t.Helper()
	var p kubeflowv1.Profile
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		t.Fatal(err)
	}
	c := plugins.FindCondition(p.Status.Conditions, condType)
	if c == nil {
		t.Fatalf("no %s condition in %v", condType, p.Status.Conditions)
	}
	return *c
}

// argoHealth runs the shipped Argo CD health check of a Profile on u, as Argo
// CD runs a resource customization: obj is the object, the script returns
// a table with status and message.
func argoHealth(t *testing.T, u *unstructured.Unstructured) (string, string) {
	t.Helper()
	script, err := os.ReadFile("../examples/deploy/argocd/profile-health.lua")
	if err != nil {
		t.Fatal(err)
	}
	L := lua.NewState()
	defer L.Close()
	data, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	var obj any
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(string(script)); err != nil {
		t.Fatalf("health check: %v", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health check returned %s, want a table", L.Get(-1).Type())
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

// toLua turns decoded JSON into Lua values.
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(x)
	case float64:
		return lua.LNumber(x)
	case bool:
		return lua.LBool(x)
	}
	return lua.LNil
}

// The Profile-level Ready condition: True once every plugin serving the
// Profile is True for its generation, False with the failing plugin's reason
// for a bad spec, every condition carrying the generation it was set from;
// `kubectl wait --for=condition=Ready` and Argo CD's health check follow it.
func TestProfileReady(t *testing.T) {
	testhost.Start(t, env,
		testhost.Plugin{Def: quotas.Definition()},
		testhost.Plugin{Def: limitrange.Definition()},
	)
	name := "ready-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil,
		entry(quotas.Kind, `{"hard":{"limits.cpu":"4"}}`),
		entry(limitrange.Kind, `{"container":{"default":{"cpu":"500m"},"max":{"cpu":"2"}}}`))

	u := waitFor(t, name, plugins.ConditionReady, plugins.ConditionTrue, 20*time.Second)
	gen := u.GetGeneration()
	for _, ct := range []string{plugins.ConditionReady, "QuotasReady", "LimitRangeReady"} {
		if c := condition(t, u, ct); c.ObservedGeneration != gen {
			t.Errorf("%s observedGeneration = %d, want the Profile's generation %d", ct, c.ObservedGeneration, gen)
		}
	}
	if c := condition(t, u, plugins.ConditionReady); c.Message != "PluginsReady: 2 plugins ready" {
		t.Errorf("Ready message = %q", c.Message)
	}
	if status, msg := argoHealth(t, u); status != "Healthy" {
		t.Errorf("Argo CD health = %s (%s), want Healthy", status, msg)
	}

	t.Run("a bad spec makes Ready False with the plugin's reason", func(t *testing.T) {
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
			p.Spec.Plugins[0] = entry(quotas.Kind, `{"hrad":{"limits.cpu":"4"}}`)
		})
		u := waitFor(t, name, plugins.ConditionReady, plugins.ConditionFalse, 20*time.Second)
		c := condition(t, u, plugins.ConditionReady)
		if !strings.HasPrefix(c.Message, "InvalidSpec: QuotasReady is False: ") || !strings.Contains(c.Message, "hrad") {
			t.Errorf("Ready message = %q, want the quotas plugin's InvalidSpec naming the field", c.Message)
		}
		if c.ObservedGeneration != u.GetGeneration() || u.GetGeneration() == gen {
			t.Errorf("Ready observedGeneration = %d, Profile generation %d (was %d)", c.ObservedGeneration, u.GetGeneration(), gen)
		}
		if status, _ := argoHealth(t, u); status != "Degraded" {
			t.Errorf("Argo CD health = %s, want Degraded", status)
		}
	})

	t.Run("a fixed spec makes it True again at the new generation", func(t *testing.T) {
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
			p.Spec.Plugins[0] = entry(quotas.Kind, `{"hard":{"limits.cpu":"8"}}`)
		})
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			u := waitFor(t, name, plugins.ConditionReady, plugins.ConditionTrue, 20*time.Second)
			c := condition(t, u, plugins.ConditionReady)
			return c.ObservedGeneration == u.GetGeneration(), fmt.Sprintf("Ready at generation %d, Profile at %d", c.ObservedGeneration, u.GetGeneration())
		})
	})
}

// The Argo CD health check reads an older Ready as progress, not health,
// and a plugin that has not reported as progress, not failure.
func TestArgoHealthOfStaleAndPendingReady(t *testing.T) {
	for _, tc := range []struct {
		reason string
		gen    int64
		ready  map[string]any
		want   string
	}{
		{"no status yet", 1, nil, "Progressing"},
		{"ready for an older generation", 3, map[string]any{"type": "Ready", "status": "True", "message": "PluginsReady: 2 plugins ready", "observedGeneration": int64(2)}, "Progressing"},
		{"a plugin has not reported", 2, map[string]any{"type": "Ready", "status": "False", "message": "Pending: QuotasReady has not been reported yet", "observedGeneration": int64(2)}, "Progressing"},
		{"a plugin failed", 2, map[string]any{"type": "Ready", "status": "False", "message": "AzureBlobError: BlobcsiReady is False: ...", "observedGeneration": int64(2)}, "Degraded"},
		{"ready, generation dropped by upstream's schema", 5, map[string]any{"type": "Ready", "status": "True", "message": "PluginsReady: 1 plugin ready"}, "Healthy"},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "p", "generation": tc.gen}}}
		if tc.ready != nil {
			u.Object["status"] = map[string]any{"conditions": []any{tc.ready}}
		}
		if got, msg := argoHealth(t, u); got != tc.want {
			t.Errorf("%s: health %s (%s), want %s", tc.reason, got, msg, tc.want)
		}
	}
}

// A plugin whose first pass over a new Profile comes late (a deep queue, a
// slow outside call) does not split the Profile's first conditions over two
// status writes: the writer holds them until every plugin has reported.
func TestOneStatusWriteWhenAPluginIsLate(t *testing.T) {
	late := plugins.Definition{Plugin: plugins.Funcs{
		KindName: "late",
		ApplyFunc: func(ctx context.Context, _ plugins.Request) (plugins.Result, error) {
			select {
			case <-time.After(5 * time.Second):
			case <-ctx.Done():
			}
			return plugins.Result{}, nil
		},
		RevokeFunc: func(context.Context, plugins.Request) (plugins.Result, error) { return plugins.Result{}, nil },
	}}
	h := testhost.Start(t, env, testhost.Plugin{Def: quotas.Definition()}, testhost.Plugin{Def: late})
	name := "late-" + rand.String(5)
	h.Counter.Reset()
	testhost.NewProfile(t, env.Client, name, nil, entry(quotas.Kind, `{"hard":{"limits.cpu":"4"}}`), entry("late", ""))
	waitFor(t, name, plugins.ConditionReady, plugins.ConditionTrue, 30*time.Second)
	if writes := h.Counter.Mutating("/profiles/" + name + "/status"); len(writes) != 1 {
		t.Errorf("status writes = %v, want exactly one carrying QuotasReady, LateReady and Ready", writes)
	}
}
