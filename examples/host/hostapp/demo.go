package hostapp

import (
	"errors"
	"path/filepath"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/profilekit/profilekit/examples/host/internal/demo"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/local"
)

// demoFlags are the flags demo and local share.
type demoFlags struct {
	config, profiles string
}

func (f *demoFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", "", "host configuration file; default the built-in copy of examples/host/config/istio.yaml")
	cmd.Flags().StringVar(&f.profiles, "profiles", "", "folder of sample Profiles (*.yaml); default examples/profiles in the source tree")
}

func newDemoCommand(app App, g *globals) *cobra.Command {
	f := &demoFlags{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run every plugin on a local control plane and show what they do",
		Long: `demo starts a private kube-apiserver and etcd (envtest), installs the Profile
CRD and any CRDs the enabled plugins need, runs the host in-process, creates
the sample Profiles with their namespaces, and prints per Profile the objects
the plugins wrote and each plugin's condition. It then overrides a quota with
a label (and shows what a bad label does), deletes an object by hand, opts
Profiles out of plugins (by spec and by label), deletes a Profile, prints how
the controllers answered each time, and exits 0.

The binaries come from $KUBEBUILDER_ASSETS, else bin/k8s/` + local.AssetsVersion + `
in the source tree (make envtest-assets builds them). The control plane and
everything in it are gone when the demo ends. To keep such a cluster running
and use it with kubectl, see local.`,
		Example: `  make demo
  go run ./examples/host demo --config examples/host/config/statcan.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := demoOptions(cmd, app, g, f)
			if err != nil {
				return err
			}
			return demo.Run(cmd.Context(), o)
		},
	}
	f.add(cmd)
	return cmd
}

// demoOptions returns what demo and local run with: the configuration
// --config names or the built-in one, the sample Profiles, the source tree
// and its assets.
func demoOptions(cmd *cobra.Command, app App, g *globals, f *demoFlags) (demo.Options, error) {
	reg, err := registry(app)
	if err != nil {
		return demo.Options{}, err
	}
	name := app.DemoConfigName
	var cfg *hostconfig.Config
	if f.config != "" {
		name = f.config
		cfg, err = hostconfig.Load(f.config, reg)
	} else if app.DemoConfig == nil {
		return demo.Options{}, errors.New("--config is required: this binary has no built-in demo configuration")
	} else {
		cfg, err = hostconfig.Parse(name, app.DemoConfig, reg)
	}
	if err != nil {
		return demo.Options{}, err
	}
	// The narration is the output; the controllers' logs (an invalid label
	// the demo provokes is logged as an error) only get in its way unless
	// asked for.
	logger := logr.Discard()
	if cmd.Flags().Changed("log-level") {
		if !cmd.Flags().Changed("log-format") {
			g.logFormat = "console"
		}
		if logger, err = g.newLogger(cmd.ErrOrStderr()); err != nil {
			return demo.Options{}, err
		}
	}
	root := local.RepoRoot()
	profiles := f.profiles
	if profiles == "" {
		profiles = filepath.Join(root, "examples", "profiles")
	}
	return demo.Options{
		Config:      cfg,
		ConfigName:  name,
		Registry:    reg,
		RepoRoot:    root,
		AssetsDir:   local.AssetsDir(root),
		ProfilesDir: profiles,
		Out:         cmd.OutOrStdout(),
		Logger:      logger,
	}, nil
}
