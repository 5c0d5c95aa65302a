package demo

// This file holds the demo's control plane: kube-apiserver and etcd with
// the CRDs the enabled plugins need, the sample Profiles and plugins it
// runs, and the host started in-process against it.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
)

// ControlPlane is a started local control plane with the CRDs that a host
// configuration's plugins need.
type ControlPlane struct {
	// Env is the running kube-apiserver and etcd; Env.Config reaches them
	// as an administrator, and Env.Stop stops them.
	Env *envtest.Environment
	// Config is the host configuration, less (with a note on Out) any plugin
	// whose CRDs could not be found.
	Config *hostconfig.Config
	// Definitions are the plugins that Config runs.
	Definitions []plugins.Definition
}

// StartControlPlane starts kube-apiserver and etcd and installs the Profile
// CRD and the CRDs of the plugins o.Config enables, as the demo does, for
// other commands that need a real control plane (the benchmark). It uses
// o.Config, o.Registry, o.RepoRoot, o.AssetsDir and o.Out; the caller stops
// the control plane with Env.Stop.
func StartControlPlane(ctx context.Context, o Options) (*ControlPlane, error) {
	d := &demo{Options: o}
	s, err := server.NewScheme()
	if err != nil {
		return nil, err
	}
	d.scheme = s
	crds, err := d.selectPlugins(ctx)
	if err != nil {
		return nil, err
	}
	env, err := d.startControlPlane(crds)
	if err != nil {
		return nil, err
	}
	return &ControlPlane{Env: env, Config: d.Config, Definitions: d.defs}, nil
}
func (d *demo) readProfiles() ([]*kubeflowv1.Profile, error) {
	files, err := filepath.Glob(filepath.Join(d.ProfilesDir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("sample Profiles: %w", err)
	}
	var out []*kubeflowv1.Profile
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("sample Profiles: %w", err)
		}
		ps, err := render.ReadProfiles(r, f)
		r.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Profiles in %s/*.yaml", d.ProfilesDir)
	}
	return out, nil
}

// selectPlugins finds the CRDs the enabled plugins need and leaves out, with a
// note, any plugin whose CRDs the demo cannot install.
func (d *demo) selectPlugins(ctx context.Context) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	pc, err := profileCRD()
	if err != nil {
		return nil, err
	}
	crds := []*apiextensionsv1.CustomResourceDefinition{pc}
	seen := map[string]bool{pc.Name: true}
	src := &crdSource{repoRoot: d.RepoRoot}
	cfg := *d.Config
	cfg.Plugins = maps.Clone(d.Config.Plugins)
	for _, kind := range d.Config.Enabled() {
		def, ok := d.Registry.Get(kind)
		if !ok {
			return nil, fmt.Errorf("plugin %s: not built into this host", kind)
		}
		var need []*apiextensionsv1.CustomResourceDefinition
		var missing error
		for _, gvk := range kinds(def, d.scheme) {
			if builtIn(gvk) {
				continue
			}
			c, err := src.find(ctx, gvk.GroupKind())
			if err != nil {
				missing = err
				break
			}
			need = append(need, c)
		}
		if missing != nil {
			d.printf("note: plugin %s left out of the demo: %v\n", kind, missing)
			sec := cfg.Plugins[kind]
			sec.Enabled = hostconfig.EnabledOff
			cfg.Plugins[kind] = sec
			continue
		}
		for _, c := range need {
			if !seen[c.Name] {
				seen[c.Name] = true
				crds = append(crds, c)
			}
		}
		d.defs = append(d.defs, def)
	}
	if len(d.defs) == 0 {
		return nil, errors.New("no plugin left to run")
	}
	d.Config = &cfg
	names := make([]string, 0, len(crds))
	for _, c := range crds {
		names = append(names, c.Name)
	}
	d.printf("plugins: %s\n", strings.Join(d.Config.Enabled(), ", "))
	d.printf("CRDs to install: %s\n", strings.Join(names, ", "))
	return crds, nil
}

// startControlPlane starts kube-apiserver and etcd, showing progress while
// they come up.
func (d *demo) startControlPlane(crds []*apiextensionsv1.CustomResourceDefinition) (*envtest.Environment, error) {
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(d.AssetsDir, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make envtest-assets` (it builds kube-apiserver and etcd from source), or point KUBEBUILDER_ASSETS at a folder that has them", bin, d.AssetsDir)
		}
	}
	d.title("Starting a local control plane")
	d.printf("kube-apiserver and etcd from %s\n", d.AssetsDir)
	env := &envtest.Environment{
		BinaryAssetsDirectory: d.AssetsDir,
		CRDs:                  crds,
		Scheme:                d.scheme,
	}
	start := time.Now()
	done := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				d.printf("  ... starting (%s)\n", time.Since(start).Round(time.Second))
			}
		}
	}()
	_, err := env.Start()
	close(done)
	<-ticked
	if err != nil {
		return nil, fmt.Errorf("start the control plane: %w", err)
	}
	d.printf("control plane up in %s at %s, %d CRDs installed\n", time.Since(start).Round(100*time.Millisecond), env.Config.Host, len(crds))
	return env, nil
}

// startHost runs the host's manager in-process, as `profilekit run` would,
// without leader election, metrics or probes.
func (d *demo) startHost(ctx context.Context, env *envtest.Environment) (func(), error) {
	mgr, err := server.NewManager(env.Config, d.Config, d.Registry, server.Options{
		MetricsAddr:        "0",
		ProbeAddr:          "0",
		Logger:             d.Logger,
		SkipNameValidation: true,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(log.IntoContext(ctx, d.Logger))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			d.printf("host: %v\n", err)
		}
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		stop()
		return nil, errors.New("the host's caches did not sync")
	}
	d.printf("host running: one controller per plugin (%s)\n", strings.Join(d.Config.Enabled(), ", "))
	return stop, nil
}
