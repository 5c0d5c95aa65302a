package apply_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// gateOnce lets the first repair through and holds back every other.
type gateOnce struct{ asked []string }

func (g *gateOnce) Repair(obj client.Object) (apply.RepairHold, bool) {
	g.asked = append(g.asked, obj.GetName())
	if len(g.asked) == 1 {
		return apply.RepairHold{}, true
	}
	return apply.RepairHold{Repairs: 1, For: time.Minute, Left: 40 * time.Second}, false
}

// An object with an upstream name that another writer changed is put back
// only when the gate lets it: held back, it is left as the other writer
// made it, and the error says who and when the Profile is passed again. A
// change the plugin wants is no repair, and the gate is not asked.
func TestRepairGate(t *testing.T) {
	const ns = "repairs"
	const name = "default-editor" // an upstream controller's name
	e := startCreateEnv(t, ns)
	ctx := t.Context()
	gate := &gateOnce{}
	applier := func() *apply.Applier {
		return apply.New(e.client, "settings", e.profile, e.owns, apply.WithScheme(e.env.Scheme),
			apply.WithLiveReader(e.env.Client), apply.WithUpstreamObjects(), apply.WithRepairGate(gate))
	}
	want := func(mode string) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap(name, ns).WithData(map[string]string{"mode": mode})
	}
	// cached waits until the cache holds the ConfigMap with mode.
	cached := func(mode string) {
		t.Helper()
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			var cm corev1.ConfigMap
			err := e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm)
			return err == nil && cm.Data["mode"] == mode, fmt.Sprintf("cached: %v, %v", cm.Data, err)
		})
	}
	// undo is the other controller's write.
	undo := func() {
		t.Helper()
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = ns, name
		if err := e.env.Client.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(`{"data":{"mode":"theirs"}}`)), client.FieldOwner("other-controller")); err != nil {
			t.Fatal(err)
		}
		cached("theirs")
	}
	sync := func() (plugins.Result, error) {
		t.Helper()
		e.counter.Reset()
		return applier().Apply(ctx, want("ours"))
	}

	if _, err := sync(); err != nil {
		t.Fatal(err)
	}
	cached("ours")
	undo()
	if res, err := sync(); err != nil || res.Count(plugins.Configured) != 1 {
		t.Fatalf("first repair: %s, %v; want it let through", res.Summary(), err)
	}
	cached("ours")
	undo()
	res, err := sync()
	if res.Count(plugins.Skipped) != 1 || len(e.counter.Mutating()) != 0 {
		t.Errorf("held-back repair: %s, writes %v; want Skipped and nothing sent", res.Summary(), e.counter.Mutating())
	}
	var held interface{ RetryAfter() time.Duration }
	if !errors.As(err, &held) || held.RetryAfter() != 40*time.Second || plugins.ReasonOf(err, "") != plugins.ReasonContested ||
		!strings.Contains(err.Error(), `"other-controller"`) || !strings.Contains(err.Error(), "1m0s") {
		t.Errorf("held-back repair: error %v; want %s naming other-controller, held for 1m0s, passed again after 40s",
			err, plugins.ReasonContested)
	}
	var cm corev1.ConfigMap
	if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil || cm.Data["mode"] != "theirs" {
		t.Errorf("held back: data %v, %v; want the other writer's left in place", cm.Data, err)
	}
	asked := len(gate.asked)
	if res, err := applier().Apply(ctx, want("new")); err != nil || res.Count(plugins.Configured) != 1 {
		t.Errorf("a change the plugin wants: %s, %v; want it written", res.Summary(), err)
	}
	if len(gate.asked) != asked {
		t.Errorf("the gate was asked about a change the plugin wants (%v)", gate.asked[asked:])
	}
}

// refuseAll holds back every repair it is asked about.
type refuseAll struct{ asked int }

func (g *refuseAll) Repair(client.Object) (apply.RepairHold, bool) {
	g.asked++
	return apply.RepairHold{Repairs: 9, For: time.Hour, Left: time.Hour}, false
}

// A tenant, with Kubeflow's rights in its namespace, who edits one of a
// plugin's objects again and again never makes the host leave it as the
// tenant made it: only objects with the upstream controller's names are
// ever held back, so every edit of any other is put back, however many,
// and the gate, even one that refuses everything, is not asked.
func TestTenantEditsAreAlwaysPutBack(t *testing.T) {
	const ns = "tenant-edits"
	e := startCreateEnv(t, ns)
	ctx := t.Context()
	gate := &refuseAll{}
	tenant := testhost.Tenant(t, e.env, ns)
	sync := func() (plugins.Result, error) {
		t.Helper()
		return apply.New(e.client, "settings", e.profile, e.owns, apply.WithScheme(e.env.Scheme), apply.WithLiveReader(e.env.Client),
			apply.WithUpstreamObjects(), apply.WithRepairGate(gate)).Apply(ctx, corev1ac.ConfigMap("guard", ns).WithData(map[string]string{"mode": "closed"}))
	}
	cached := func(mode string) {
		t.Helper()
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			var cm corev1.ConfigMap
			err := e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "guard"}, &cm)
			return err == nil && cm.Data["mode"] == mode, fmt.Sprintf("cached: %v, %v", cm.Data, err)
		})
	}
	if _, err := sync(); err != nil {
		t.Fatal(err)
	}
	cached("closed")
	for i := range 6 {
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = ns, "guard"
		if err := tenant.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(`{"data":{"mode":"open"}}`)), client.FieldOwner("tenant")); err != nil {
			t.Fatalf("the tenant's edit %d: %v", i, err)
		}
		cached("open")
		if res, err := sync(); err != nil || res.Count(plugins.Configured) != 1 {
			t.Fatalf("the tenant's edit %d: %s, %v; want it put back", i, res.Summary(), err)
		}
		cached("closed")
	}
	if gate.asked != 0 {
		t.Errorf("the gate was asked %d times about an object a tenant edits", gate.asked)
	}
}
