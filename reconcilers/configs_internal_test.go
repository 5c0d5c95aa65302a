package reconcilers

import (
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// demoConfig is the config of the plugin of TestDecodedConfigsAreShared.
type demoConfig struct {
	Size int `json:"size"`
}

// A pass decodes a config once per spec entry and settings: Profiles with
// the same entry (none, most often) share it, another entry or the
// candidate settings of a staged rollout get their own, and a config that
// does not decode is decoded, and refused, again each time.
func TestDecodedConfigsAreShared(t *testing.T) {
	decodes := 0
	def := plugins.Definition{Plugin: plugins.Funcs{KindName: "demo"}, NewConfig: func() any { decodes++; return &demoConfig{} }}
	r := &Reconciler{def: def}
	profile := func(name string, specs ...string) *kubeflowv1.Profile {
		p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, s := range specs {
			e := kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: "demo"}}
			if s != "" {
				e.Spec = &runtime.RawExtension{Raw: []byte(s)}
			}
			p.Spec.Plugins = append(p.Spec.Plugins, e)
		}
		return p
	}
	stable := settings{Settings: Settings{Defaults: []byte(`{"size": 1}`)}}
	candidate := settings{Settings: Settings{Defaults: []byte(`{"size": 2}`)}, staged: true, candidate: true}
	decode := func(s settings, p *kubeflowv1.Profile) (*demoConfig, error) {
		t.Helper()
		cfg, err := r.decode(s, p)
		if err != nil {
			return nil, err
		}
		return cfg.(*demoConfig), nil
	}

	a, _ := decode(stable, profile("a"))
	b, _ := decode(stable, profile("b", "")) // listed without a spec
	c, _ := decode(stable, profile("c", " null "))
	if a != b || b != c || a.Size != 1 || decodes != 1 {
		t.Errorf("Profiles without a spec of their own: configs %p %p %p (size %d), %d decodes; want one config of size 1, decoded once", a, b, c, a.Size, decodes)
	}
	d, _ := decode(stable, profile("d", `{"size": 3}`))
	e, _ := decode(stable, profile("e", `{"size": 3}`))
	if d == a || d != e || d.Size != 3 || decodes != 2 {
		t.Errorf("a spec of their own: configs %p %p (size %d), %d decodes; want one more config, of size 3", d, e, d.Size, decodes)
	}
	f, _ := decode(candidate, profile("f"))
	if f == a || f.Size != 2 {
		t.Errorf("the candidate settings share the stable ones' config (size %d)", f.Size)
	}
	before := decodes
	for range 2 {
		if _, err := decode(stable, profile("g", `{"size": "big"}`)); err == nil {
			t.Error("a spec that does not decode gave a config")
		}
		if _, err := decode(stable, profile("h", "", "")); err == nil {
			t.Error("a Profile that lists the plugin twice gave a config")
		}
	}
	if decodes-before != 4 {
		t.Errorf("failures decoded %d times in two passes each, want every time (4)", decodes-before)
	}
}

// The configs a Reconciler keeps are bounded: past maxConfigs, it starts
// again.
func TestDecodedConfigsAreBounded(t *testing.T) {
	def := plugins.Definition{Plugin: plugins.Funcs{KindName: "demo"}, NewConfig: func() any { return &demoConfig{} }}
	r := &Reconciler{def: def}
	for i := range maxConfigs + 10 {
		p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		p.Spec.Plugins = []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: "demo"}, Spec: &runtime.RawExtension{Raw: []byte(`{"size": ` + strconv.Itoa(i) + `}`)}}}
		if _, err := r.decode(settings{}, p); err != nil {
			t.Fatal(err)
		}
	}
	if r.configs.n > maxConfigs || len(r.configs.byDefaults[0]) > maxConfigs {
		t.Errorf("%d configs kept, want at most %d", r.configs.n, maxConfigs)
	}
}
