package reconcilers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/profilekit/profilekit/plugins"
)

func TestCachedForms(t *testing.T) {
	var (
		configMap   = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
		claim       = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
		binding     = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}
		policy      = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}
		serviceAcct = schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}
	)
	def := func(kind string, owns, reads []schema.GroupVersionKind) plugins.Definition {
		return plugins.Definition{Plugin: plugins.Funcs{KindName: kind}, Owns: owns, Reads: reads}
	}
	core := def("core", []schema.GroupVersionKind{binding, serviceAcct}, nil)
	rbac := def("rbac", []schema.GroupVersionKind{binding}, []schema.GroupVersionKind{binding})
	volumes := def("volumes", []schema.GroupVersionKind{claim}, []schema.GroupVersionKind{claim})
	replicate := def("replicate", []schema.GroupVersionKind{configMap, policy}, nil)

	for _, c := range []struct {
		reason string
		got    []schema.GroupVersionKind
		want   []schema.GroupVersionKind
	}{
		{"a plugin that reads nothing whole reads its kinds as metadata", metadataOnly(core), []schema.GroupVersionKind{binding, serviceAcct}},
		{"a kind another plugin reads whole is not metadata only", metadataOnly(core, binding), []schema.GroupVersionKind{serviceAcct}},
		{"a kind in Reads is whole", metadataOnly(rbac), nil},
		{"ConfigMaps, the outside-state record's kind, are always whole", metadataOnly(replicate), []schema.GroupVersionKind{policy}},
		{"WholeKinds unites what every plugin reads whole, sorted", WholeKinds(core, rbac, volumes, replicate), []schema.GroupVersionKind{configMap, claim, binding}},
		{"no plugin reads anything whole", WholeKinds(core), nil},
	} {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}
