package plugins_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/profilekit/profilekit/plugins"
)

func TestForHost(t *testing.T) {
	configMaps := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	monitors := schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}
	roles := schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}
	type cfg struct{ kinds []schema.GroupVersionKind }
	def := plugins.Definition{
		Plugin:    plugins.Funcs{KindName: "templated"},
		NewConfig: func() any { return &cfg{} },
		Owns:      []schema.GroupVersionKind{configMaps},
		OwnsFrom: func(hostConfig any) ([]schema.GroupVersionKind, error) {
			c, ok := hostConfig.(*cfg)
			if !ok {
				return nil, errors.New("not my config")
			}
			return c.kinds, nil
		},
	}
	for _, tt := range []struct {
		reason  string
		def     plugins.Definition
		config  any
		want    []schema.GroupVersionKind
		wantErr bool
	}{
		{reason: "the config's kinds follow Owns", def: def, config: &cfg{kinds: []schema.GroupVersionKind{monitors, roles}}, want: []schema.GroupVersionKind{configMaps, monitors, roles}},
		{reason: "a kind Owns holds already, and a kind twice, come once", def: def, config: &cfg{kinds: []schema.GroupVersionKind{roles, configMaps, roles}}, want: []schema.GroupVersionKind{configMaps, roles}},
		{reason: "a config that names none", def: def, config: &cfg{}, want: []schema.GroupVersionKind{configMaps}},
		{reason: "without OwnsFrom, Owns as it is", def: plugins.Definition{Plugin: def.Plugin, Owns: def.Owns}, config: "anything", want: []schema.GroupVersionKind{configMaps}},
		{reason: "a config OwnsFrom cannot read", def: def, config: "not a config", wantErr: true},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			got, err := tt.def.ForHost(tt.config)
			if tt.wantErr {
				if err == nil || plugins.ReasonOf(err, "") != plugins.ReasonInvalidConfig {
					t.Fatalf("ForHost error = %v, want an InvalidConfig error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Owns); diff != "" {
				t.Errorf("Owns (-want +got):\n%s", diff)
			}
			again, err := got.ForHost(tt.config)
			if err != nil || !cmp.Equal(got.Owns, again.Owns) {
				t.Errorf("ForHost of its own result = %v, %v; want the same Owns", again.Owns, err)
			}
		})
	}
	if _, err := def.ForHost(&cfg{kinds: []schema.GroupVersionKind{monitors}}); err != nil || len(def.Owns) != 1 {
		t.Errorf("ForHost changed the definition it was called on: Owns = %v", def.Owns)
	}
}
