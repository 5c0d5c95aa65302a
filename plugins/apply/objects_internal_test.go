package apply

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "istio.io/api/networking/v1"
	istioac "istio.io/client-go/pkg/applyconfiguration/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// istioRoute is an Istio object as plugins hand it to the Applier: a
// generated apply configuration whose spec encodes itself (jsonpb), wrapped
// in Encoded. Its strings hold the characters the encoder escapes.
func istioRoute() runtime.ApplyConfiguration {
	return Encoded(istioac.VirtualService("notebooks", "team").WithSpec(networkingv1.VirtualService{
		Hosts:    []string{"*"},
		Gateways: []string{"kubeflow/kubeflow-gateway"},
		Http: []*networkingv1.HTTPRoute{{
			Match: []*networkingv1.HTTPMatchRequest{{Uri: &networkingv1.StringMatch{MatchType: &networkingv1.StringMatch_Prefix{Prefix: "/notebook/team/<a&b>/"}}}},
			Route: []*networkingv1.HTTPRouteDestination{{Destination: &networkingv1.Destination{Host: "svc.team.svc.cluster.local", Port: &networkingv1.PortSelector{Number: 80}}}},
		}},
	}))
}

// marshalerPath is how the Applier encoded an Encoded value before it
// encoded the value inside directly.
func marshalerPath(ac runtime.ApplyConfiguration) (map[string]any, error) {
	data, err := json.Marshal(ac)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}

func TestEncodedValueIsEncodedDirectly(t *testing.T) {
	ac := istioRoute()
	want, err := marshalerPath(ac)
	if err != nil {
		t.Fatal(err)
	}
	got, err := toUnstructured(ac)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Object); diff != "" {
		t.Errorf("encoding the value inside Encoded changed the desired object (-through MarshalJSON +direct):\n%s", diff)
	}
	if got.GetName() != "notebooks" || got.GetKind() != "VirtualService" {
		t.Errorf("desired object is %s %q, want VirtualService notebooks", got.GetKind(), got.GetName())
	}
}

func TestEncodedValueThatFailsIsAnError(t *testing.T) {
	for name, v := range map[string]any{
		"a value JSON cannot hold": Encoded(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": func() {}}),
		"not an object":            Encoded([]string{"a"}),
	} {
		if _, err := toUnstructured(v.(runtime.ApplyConfiguration)); err == nil {
			t.Errorf("%s: toUnstructured returned no error", name)
		}
	}
}

// BenchmarkEncodeIstioObject compares encoding an Istio object through
// encoded's MarshalJSON with encoding the value inside directly.
func BenchmarkEncodeIstioObject(b *testing.B) {
	ac := istioRoute()
	b.Run("marshaler", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(ac); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeDesired(ac); err != nil {
				b.Fatal(err)
			}
		}
	})
}
