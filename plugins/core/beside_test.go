package core_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
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

	testhost.WaitCondition(t, env.Client, name, "QuotasReady", plugins.ConditionTrue, "1 objects in sync")
	var rq corev1.ResourceQuota
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: name, Name: quotas.DefaultName}, &rq); err != nil {
		t.Fatal(err)
	}
	if got := rq.Spec.Hard["limits.cpu"]; got.String() != "4" {
		t.Errorf("profilekit-quota limits.cpu = %s, want 4", got.String())
	}
	if got := h.ResyncWrites(t, 3, quotas.Kind); len(got) != 0 {
		t.Errorf("mutating requests on resync = %v, want none", got)
	}
	for _, o := range upstream {
		u, err := getObject(context.Background(), gvkOf(t, o), nsOf(o, name), o.GetName())
		if err != nil {
			t.Fatal(err)
		}
		if u.GetResourceVersion() != o.GetResourceVersion() {
			t.Errorf("upstream's %T %s was written", o, o.GetName())
		}
	}
}
