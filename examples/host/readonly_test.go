package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
)

// readOnly runs a plugin and reports a pass that changed the config or the
// Profile it was given.
type readOnly struct {
	plugins.Plugin
	def      plugins.Definition
	defaults func() []byte
	mu       *sync.Mutex
	problems *[]string
	passes   map[string]int
}

func (p readOnly) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	fresh, decodeErr := p.def.Decode(p.defaults(), req.Profile)
	before := req.Profile.DeepCopy()
	res, err := p.Plugin.Apply(ctx, req)
	var problems []string
	if decodeErr == nil && !reflect.DeepEqual(fresh, req.Config) {
		problems = append(problems, fmt.Sprintf("plugin %s changed its config for Profile %s: %+v, decoded %+v", p.Kind(), req.Profile.Name, req.Config, fresh))
	}
	if !equality.Semantic.DeepEqual(before, req.Profile) {
		problems = append(problems, fmt.Sprintf("plugin %s changed Profile %s", p.Kind(), req.Profile.Name))
	}
	p.mu.Lock()
	*p.problems = append(*p.problems, problems...)
	p.passes[p.Kind()]++
	p.mu.Unlock()
	return res, err
}

// TestPluginsReadConfigAndProfileOnly renders the sample Profiles (and one
// that lists the cloud identity plugins) under
// every shipped configuration with each built-in plugin watched: Apply
// leaves the config and the Profile it is given as they were. The
// standalone host hands a plugin its cache's own Profile, and the same
// decoded config for every pass of the Profiles with the same spec entry
// (plugins.Request).
func TestPluginsReadConfigAndProfileOnly(t *testing.T) {
	configs, err := filepath.Glob("config/*.yaml")
	if err != nil || len(configs) == 0 {
		t.Fatalf("no configurations: %v", err)
	}
	samples, err := filepath.Glob("../profiles/*.yaml")
	if err != nil || len(samples) == 0 {
		t.Fatalf("no sample Profiles: %v", err)
	}
	// The cloud identity plugins serve only Profiles that list them.
	samples = append(samples, "testdata/cloud-identity.yaml")
	var profiles []*kubeflowv1.Profile
	for _, f := range samples {
		data, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		ps, _, err := render.ReadInput(data, f)
		data.Close()
		if err != nil {
			t.Fatal(err)
		}
		profiles = append(profiles, ps...)
	}
	scheme, err := server.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, path := range configs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var (
				mu       sync.Mutex
				problems []string
				cfg      *hostconfig.Config
				passes   = map[string]int{}
			)
			var defs []plugins.Definition
			for _, d := range builtin.Definitions() {
				kind := d.Kind()
				defaults := func() []byte {
					sec, _ := cfg.Section(kind)
					return sec.Defaults
				}
				d.Plugin = readOnly{Plugin: d.Plugin, def: d, defaults: defaults, mu: &mu, problems: &problems, passes: passes}
				defs = append(defs, d)
			}
			reg, err := plugins.NewRegistry(defs...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg, err = hostconfig.Load(path, reg); err != nil {
				t.Fatal(err)
			}
			// Failures (a source render does not have) do not matter here.
			_, _ = render.New(cfg, reg, scheme).Render(t.Context(), profiles)
			for _, p := range problems {
				t.Error(p)
			}
			for _, kind := range cfg.Enabled() {
				seen[kind] += passes[kind]
			}
			t.Logf("passes: %v", passes)
		})
	}
	for _, d := range builtin.Definitions() {
		if seen[d.Kind()] == 0 {
			t.Errorf("plugin %s never ran on the sample Profiles: its config and Profile went unchecked", d.Kind())
		}
	}
}
