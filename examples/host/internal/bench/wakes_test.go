package bench

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/local"
	"github.com/profilekit/profilekit/plugins"
)

// wakeProfiles is how many Profiles TestConvergenceWakesOnlyWhoReads
// converges: enough that passes overlap and the caches lag behind the
// writes, as they do at 1,000.
const wakeProfiles = 20

// TestConvergenceWakesOnlyWhoReads converges the benchmark's Profiles
// with istio.yaml's plugins, as the benchmark does, and counts each
// plugin's reconciles per Profile by what woke them: a plugin is woken by
// the events that can change what it wants, so that the whole convergence
// takes at most one reconcile per plugin and two to spare per Profile.
func TestConvergenceWakesOnlyWhoReads(t *testing.T) {
	root := local.RepoRoot()
	reg, err := plugins.NewRegistry(builtin.Definitions()...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := hostconfig.Load(filepath.Join(root, "examples", "host", "config", "istio.yaml"), reg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := Options{
		Config: cfg, ConfigName: "istio.yaml", Registry: reg, RepoRoot: root, AssetsDir: local.AssetsDir(root),
		Profiles: wakeProfiles, Timeout: 5 * time.Minute, Out: &out, Logger: logr.Discard(),
	}
	b := newBench(o, &Result{Profiles: wakeProfiles}, RegimeUnthrottled)
	ctx := t.Context()
	if err := b.open(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.close()
	profiles := make([]*kubeflowv1.Profile, wakeProfiles)
	for i := range profiles {
		profiles[i] = Profile("wake", i+1)
	}
	d, err := b.renderDesired(ctx, profiles)
	if err != nil {
		t.Fatal(err)
	}
	b.extraProfiles = warmUpProfiles
	h, err := b.startHost(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.stop(h)
	err = b.converge(ctx, h, profiles, d)
	t.Logf("convergence:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	r := b.res.Reconciles
	if r == nil {
		t.Fatal("the convergence kept no reconciles")
	}
	if len(r.ByPlugin) != len(b.defs) {
		t.Errorf("reconciles of %d plugins counted, want every one of the %d: %v", len(r.ByPlugin), len(b.defs), r.ByPlugin)
	}
	for p, n := range r.ByPlugin {
		// Every plugin decides on every Profile at least once, whether it
		// applies or not.
		if n < 1 {
			t.Errorf("plugin %s: %.2f reconciles per Profile, want at least 1", p, n)
		}
	}
	if r.PerProfile > r.Target() {
		t.Errorf("%.2f reconciles per Profile, want at most %.0f (plugins + 2)", r.PerProfile, r.Target())
	}
}
