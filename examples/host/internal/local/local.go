// Package local starts what the demo and the benchmark run on: a private
// kube-apiserver and etcd (envtest) with the CRDs that a host
// configuration's plugins need, and the host's manager in-process against
// them, built as `profilekit run` builds it. For a cluster that stays up
// (`profilekit local`) it also starts kube-controller-manager, makes
// Kubeflow's roles, writes a kubeconfig, and lets the machine's own browser
// open the tenant page as a user (AsUser).
package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
)

// AssetsVersion names the folder under bin/k8s that `make envtest-assets`
// fills with kube-apiserver and etcd. It follows the Makefile and
// internal/testenv (a test keeps them in step).
const AssetsVersion = "1.36.3-etcd3.6.6"

// Options say what to start.
type Options struct {
	// Config is the host configuration; its enabled plugins decide the CRDs.
	Config *hostconfig.Config
	// Registry holds the plugins built in.
	Registry *plugins.Registry
	// RepoRoot is the profilekit source tree, where bin/ and examples/ are.
	RepoRoot string
	// AssetsDir holds kube-apiserver and etcd.
	AssetsDir string
	// Out receives progress: the plugins, the CRDs, the start-up.
	Out io.Writer
}

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
	// Scheme knows every kind the host reads or writes.
	Scheme *runtime.Scheme
}

// StartControlPlane starts kube-apiserver and etcd and installs the Profile
// CRD and the CRDs of the plugins o.Config enables. A plugin whose CRDs
// cannot be found is left out with a note on o.Out. The caller stops the
// control plane with Env.Stop.
func StartControlPlane(ctx context.Context, o Options) (*ControlPlane, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	s, err := server.NewScheme()
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Scheme: s}
	crds, err := cp.selectPlugins(ctx, o)
	if err != nil {
		return nil, err
	}
	if cp.Env, err = startEnv(o, crds, s); err != nil {
		return nil, err
	}
	return cp, nil
}

// selectPlugins finds the CRDs the enabled plugins need and leaves out, with a
// note, any plugin whose CRDs cannot be installed.
func (cp *ControlPlane) selectPlugins(ctx context.Context, o Options) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	pc, err := profileCRD()
	if err != nil {
		return nil, err
	}
	crds := []*apiextensionsv1.CustomResourceDefinition{pc}
	seen := map[string]bool{pc.Name: true}
	src := &crdSource{repoRoot: o.RepoRoot}
	cfg := *o.Config
	cfg.Plugins = maps.Clone(o.Config.Plugins)
	for _, kind := range o.Config.Enabled() {
		def, ok := o.Registry.Get(kind)
		if !ok {
			return nil, fmt.Errorf("plugin %s: not built into this host", kind)
		}
		var need []*apiextensionsv1.CustomResourceDefinition
		var missing error
		for _, gvk := range kinds(def, cp.Scheme) {
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
			fmt.Fprintf(o.Out, "note: plugin %s left out: %v\n", kind, missing)
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
		cp.Definitions = append(cp.Definitions, def)
	}
	if len(cp.Definitions) == 0 {
		return nil, errors.New("no plugin left to run")
	}
	cp.Config = &cfg
	names := make([]string, 0, len(crds))
	for _, c := range crds {
		names = append(names, c.Name)
	}
	fmt.Fprintf(o.Out, "plugins: %s\n", strings.Join(cfg.Enabled(), ", "))
	fmt.Fprintf(o.Out, "CRDs to install: %s\n", strings.Join(names, ", "))
	return crds, nil
}

// startEnv starts kube-apiserver and etcd, showing progress while they come
// up.
func startEnv(o Options, crds []*apiextensionsv1.CustomResourceDefinition, s *runtime.Scheme) (*envtest.Environment, error) {
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(o.AssetsDir, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make envtest-assets` (it builds kube-apiserver and etcd from source), or point KUBEBUILDER_ASSETS at a folder that has them", bin, o.AssetsDir)
		}
	}
	fmt.Fprintf(o.Out, "\n== Starting a local control plane\nkube-apiserver and etcd from %s\n", o.AssetsDir)
	env := &envtest.Environment{BinaryAssetsDirectory: o.AssetsDir, CRDs: crds, Scheme: s}
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
				fmt.Fprintf(o.Out, "  ... starting (%s)\n", time.Since(start).Round(time.Second))
			}
		}
	}()
	_, err := env.Start()
	close(done)
	<-ticked
	if err != nil {
		return nil, fmt.Errorf("start the control plane: %w", err)
	}
	fmt.Fprintf(o.Out, "control plane up in %s at %s, %d CRDs installed\n", time.Since(start).Round(100*time.Millisecond), env.Config.Host, len(crds))
	return env, nil
}

// RepoRoot returns the profilekit source tree that holds the working
// folder, or the working folder itself when it is in none.
func RepoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(data, []byte("module github.com/profilekit/profilekit\n")) {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

// AssetsDir returns where kube-apiserver and etcd are: $KUBEBUILDER_ASSETS,
// else bin/k8s/AssetsVersion under the source tree root.
func AssetsDir(root string) string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(root, "bin", "k8s", AssetsVersion)
}
