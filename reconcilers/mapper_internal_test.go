package reconcilers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// askedMapper counts the RESTMapping calls that reach a real mapper.
type askedMapper struct {
	*meta.DefaultRESTMapper
	asked int
}

func (m *askedMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked++
	return m.DefaultRESTMapper.RESTMapping(gk, versions...)
}

// TestFoundMappingsAreKept: a mapping found is answered again without the
// wrapped mapper, as a copy the caller may change; a kind not served is
// asked again each time, so that it is found once its CRD is installed.
func TestFoundMappingsAreKept(t *testing.T) {
	quota := schema.GroupVersionKind{Version: "v1", Kind: "ResourceQuota"}
	policy := schema.GroupVersionKind{Group: "security.istio.io", Version: "v1", Kind: "AuthorizationPolicy"}
	inner := &askedMapper{DefaultRESTMapper: meta.NewDefaultRESTMapper(nil)}
	inner.Add(quota, meta.RESTScopeNamespace)
	m := &foundMappings{RESTMapper: inner}

	first, err := m.RESTMapping(quota.GroupKind(), quota.Version)
	if err != nil {
		t.Fatal(err)
	}
	first.Resource.Resource = "changed by a caller"
	second, err := m.RESTMapping(quota.GroupKind(), quota.Version)
	if err != nil {
		t.Fatal(err)
	}
	want := schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	if diff := cmp.Diff(want, second.Resource); diff != "" {
		t.Errorf("second answer (-want +got):\n%s", diff)
	}
	if inner.asked != 1 {
		t.Errorf("the wrapped mapper was asked %d times for one kind, want 1", inner.asked)
	}

	for range 2 {
		if _, err := m.RESTMapping(policy.GroupKind(), policy.Version); !meta.IsNoMatchError(err) {
			t.Fatalf("kind not served: got %v, want a no-match error", err)
		}
	}
	inner.Add(policy, meta.RESTScopeNamespace)
	got, err := m.RESTMapping(policy.GroupKind(), policy.Version)
	if err != nil {
		t.Fatalf("kind served after two misses: %v", err)
	}
	if got.Resource.Resource != "authorizationpolicies" {
		t.Errorf("resource %q, want authorizationpolicies", got.Resource.Resource)
	}
	if inner.asked != 4 {
		t.Errorf("the wrapped mapper was asked %d times, want 4 (one for the quota, three for the policy)", inner.asked)
	}
}
