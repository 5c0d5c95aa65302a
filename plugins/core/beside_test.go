package core_test

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestBesideUpstream runs a plugin without core in a namespace that the
// upstream controller made, as clusters that keep upstream do: the plugin
// writes its own object and leaves upstream's alone.
func TestBesideUpstream(t *testing.T) {
	run := "beside-" + rand.String(4)
	name := "beside-" + rand.String(5)
	defaults, _ := json.Marshal(map[string]any{"hard": map[string]string{"limits.cpu": "4"}})
	h := testhost.Start(t, env, testhost.Plugin{Def: quotas.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(defaults),
		reconcilers.WithEnabledForAll(labels.SelectorFromSet(labels.Set{labelTest: run})),
		reconcilers.WithResync(300 * time.Millisecond),
	}})
	p := newProfile(t, name, run, "alice@example.org", func(p *kubeflowv1.Profile) { p.Spec.ResourceQuotaSpec = quota("cpu", "2") })
	upstream := createUpstreamShape(t, p)

	testhost.WaitCondition(t, env.Client, name, "QuotasReady", plugins.ConditionTrue, "1 object in sync")
	var rq corev1.ResourceQuota
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: quotas.DefaultName}, &rq); err != nil {
		t.Fatal(err)
	}
	if got := rq.Spec.Hard["limits.cpu"]; got.String() != "4" {
		t.Errorf("profilekit-quota limits.cpu = %s, want 4", got.String())
	}
	if got := h.ResyncWrites(t, 3, quotas.Kind); len(got) != 0 {
		t.Errorf("mutating requests on resync = %v, want none", got)
	}
	for _, o := range upstream {
		u, err := getObject(t.Context(), gvkOf(t, o), nsOf(o, name), o.GetName())
		if err != nil {
			t.Fatal(err)
		}
		if u.GetResourceVersion() != o.GetResourceVersion() {
			t.Errorf("upstream's %T %s was written", o, o.GetName())
		}
	}
}

// TestPluginsWaitForCoreNamespace runs core and another plugin together on a
// Profile alone: the other plugin waits for core's namespace instead of
// failing into it, so it reports no failure and sends no failed request.
func TestPluginsWaitForCoreNamespace(t *testing.T) {
	run := "gate-" + rand.String(4)
	name := "gate-" + rand.String(5)
	sel := labels.SelectorFromSet(labels.Set{labelTest: run})
	coreDefaults, _ := json.Marshal(map[string]any{})
	quotaDefaults, _ := json.Marshal(map[string]any{"hard": map[string]string{"limits.cpu": "4"}})
	all := func(*kubeflowv1.Profile) bool { return true }
	h := testhost.Start(t, env,
		testhost.Plugin{Def: core.Definition(), Options: []reconcilers.Option{reconcilers.WithDefaults(coreDefaults), reconcilers.WithEnabledForAll(sel)}},
		testhost.Plugin{Def: quotas.Definition(), Options: []reconcilers.Option{reconcilers.WithDefaults(quotaDefaults), reconcilers.WithEnabledForAll(sel), reconcilers.WithNamespaceGate(all)}},
	)
	newProfile(t, name, run, "alice@example.org", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	testhost.WaitCondition(t, env.Client, name, "QuotasReady", plugins.ConditionTrue, "1 object in sync")

	if quotaApplies := h.Counter.Mutating("/resourcequotas/"); len(quotaApplies) != 1 {
		t.Errorf("quota requests = %v, want one apply", quotaApplies)
	}
	var evs eventsv1.EventList
	if err := env.Client.List(t.Context(), &evs); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == name && e.Type == corev1.EventTypeWarning {
			t.Errorf("warning Event %s: %s", e.Reason, e.Note)
		}
	}
}
