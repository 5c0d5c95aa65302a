package egress_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/egress"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{Istio: true}) }

const condType = "EgressReady"

var hosts = []egress.ExternalHost{{Host: "storage.example.com", Port: 8443}, {Host: "api.example.org"}}

func egressPlugin(t *testing.T, spec map[string]any) kubeflowv1.Plugin {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: egress.Kind}, Spec: &runtime.RawExtension{Raw: raw}}
}

// objects reads the plugin's four objects in ns; missing ones are nil.
type objects struct {
	se      *istionetworkingv1.ServiceEntry
	dr      *istionetworkingv1.DestinationRule
	mesh    *istionetworkingv1.VirtualService
	gateway *istionetworkingv1.VirtualService
}

func read(t *testing.T, ns string) (objects, int) {
	t.Helper()
	var o objects
	n := 0
	get := func(name string, obj client.Object) bool {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		return true
	}
	if se := (&istionetworkingv1.ServiceEntry{}); get(egress.DefaultName, se) {
		o.se = se
	}
	if dr := (&istionetworkingv1.DestinationRule{}); get(egress.DefaultName, dr) {
		o.dr = dr
	}
	if vs := (&istionetworkingv1.VirtualService{}); get(egress.DefaultName+"-mesh", vs) {
		o.mesh = vs
	}
	if vs := (&istionetworkingv1.VirtualService{}); get(egress.DefaultName+"-gateway", vs) {
		o.gateway = vs
	}
	return o, n
}

// waitObjects waits until the live specs equal what Build gives for p.
func waitObjects(t *testing.T, p *kubeflowv1.Profile, cfg *egress.Config) objects {
	t.Helper()
	want := egress.Build(cfg, p)
	var got objects
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		o, n := read(t, p.Name)
		if n != 4 {
			return false, fmt.Sprintf("%d of 4 objects", n)
		}
		got = o
		d := cmp.Diff(want.ServiceEntry.Spec, &o.se.Spec, protocmp.Transform()) +
			cmp.Diff(want.DestinationRule.Spec, &o.dr.Spec, protocmp.Transform()) +
			cmp.Diff(want.MeshRoute.Spec, &o.mesh.Spec, protocmp.Transform()) +
			cmp.Diff(want.GatewayRoute.Spec, &o.gateway.Spec, protocmp.Transform())
		return d == "", "specs (-want +got):\n" + d
	})
	return got
}

func waitNone(t *testing.T, ns string) {
	t.Helper()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		_, n := read(t, ns)
		return n == 0, fmt.Sprintf("%d objects left", n)
	})
}

func setLabel(t *testing.T, name, key, value string, remove bool) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		if remove {
			delete(p.Labels, key)
		} else {
			p.Labels[key] = value
		}
	})
}

func TestGateLabelTurnsRoutingOnAndOff(t *testing.T) {
	h := testhost.Start(t, env, testhost.Plugin{Def: egress.Definition(), Options: []reconcilers.Option{reconcilers.WithResync(300 * time.Millisecond)}})
	name := "egress-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, map[string]string{egress.DefaultGateLabel: "true"}, egressPlugin(t, map[string]any{"hosts": hosts}))
	cfg := egress.NewConfig()
	cfg.Hosts = hosts

	o := waitObjects(t, p, cfg)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "4 objects in sync")

	t.Run("routes and export as designed", func(t *testing.T) {
		// Spot checks by value, so that a wrong builder cannot hide behind
		// comparing the builder with itself.
		if got := o.se.Spec.ExportTo; !cmp.Equal(got, []string{".", "istio-system"}) {
			t.Errorf("ServiceEntry exportTo = %v", got)
		}
		if got := o.gateway.Spec.ExportTo; !cmp.Equal(got, []string{"istio-system"}) {
			t.Errorf("gateway VirtualService exportTo = %v", got)
		}
		if got := o.mesh.Spec.Tls[1].Route[0].Destination; got.Host != egress.DefaultGatewayService || got.Port.Number != 443 || got.Subset != egress.DefaultName {
			t.Errorf("mesh route for storage goes to %v", got)
		}
		if got := o.gateway.Spec.Tls[1]; got.Match[0].SniHosts[0] != "storage.example.com" || got.Route[0].Destination.Port.Number != 8443 {
			t.Errorf("gateway route for storage = %v", got)
		}
		for _, obj := range []client.Object{o.se, o.dr, o.mesh, o.gateway} {
			if diff := cmp.Diff(plugins.OwnershipLabels(egress.Kind, name), obj.GetLabels()); diff != "" {
				t.Errorf("%s labels (-want +got):\n%s", obj.GetName(), diff)
			}
			if refs := obj.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != p.UID {
				t.Errorf("%s owner references = %+v, want one to the Profile", obj.GetName(), refs)
			}
		}
	})

	t.Run("no finalizer: nothing lives outside the Profile's namespace", func(t *testing.T) {
		var live kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &live); err != nil {
			t.Fatal(err)
		}
		if len(live.Finalizers) != 0 {
			t.Errorf("finalizers = %v, want none", live.Finalizers)
		}
	})

	t.Run("resync with nothing changed sends no mutating request", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, egress.Kind); len(got) != 0 {
			t.Errorf("mutating requests on resync = %v, want none", got)
		}
	})

	t.Run("gate false removes the objects", func(t *testing.T) {
		setLabel(t, name, egress.DefaultGateLabel, "false", false)
		waitNone(t, name)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "0 objects in sync")
	})

	t.Run("gate true brings them back", func(t *testing.T) {
		setLabel(t, name, egress.DefaultGateLabel, "True", false)
		waitObjects(t, p, cfg)
	})

	t.Run("a gate that does not parse is off and reported", func(t *testing.T) {
		setLabel(t, name, egress.DefaultGateLabel, "yes-please", false)
		waitNone(t, name)
		cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, plugins.ReasonInvalidLabel)
		if want := `label ` + egress.DefaultGateLabel + `="yes-please" is not true or false; egress routing is off`; !strings.Contains(cond.Message, want) {
			t.Errorf("condition message %q does not contain %q", cond.Message, want)
		}
	})

	t.Run("removing the label leaves the spec's enabled, false here", func(t *testing.T) {
		setLabel(t, name, egress.DefaultGateLabel, "true", false)
		waitObjects(t, p, cfg)
		setLabel(t, name, egress.DefaultGateLabel, "", true)
		waitNone(t, name)
	})
}

func TestSpecEnabledGatesWithoutLabel(t *testing.T) {
	testhost.Start(t, env, testhost.Plugin{Def: egress.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(`{"allowedHosts":["*.example.com"]}`)),
	}})
	name := "egspec-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, nil, egressPlugin(t, map[string]any{"enabled": true, "hosts": hosts[:1]}))
	cfg := egress.NewConfig()
	cfg.Enabled = true
	cfg.Hosts = hosts[:1]
	waitObjects(t, p, cfg)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "4 objects in sync")

	t.Run("a host outside allowedHosts is refused and changes nothing", func(t *testing.T) {
		before, _ := read(t, name)
		var live kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &live); err != nil {
			t.Fatal(err)
		}
		live.Spec.Plugins = []kubeflowv1.Plugin{egressPlugin(t, map[string]any{"enabled": true, "hosts": []egress.ExternalHost{{Host: "evil.example.net"}}})}
		if err := env.Client.Update(t.Context(), &live); err != nil {
			t.Fatal(err)
		}
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse,
			`InvalidSpec: spec.plugins[0] (egress).spec: hosts[0]: host "evil.example.net" is not among the allowed hosts [*.example.com]`)
		time.Sleep(time.Second)
		after, n := read(t, name)
		if n != 4 || after.se.ResourceVersion != before.se.ResourceVersion {
			t.Errorf("objects changed after an invalid spec: %d objects, ServiceEntry resourceVersion %s -> %s", n, before.se.ResourceVersion, after.se.ResourceVersion)
		}
	})
}
