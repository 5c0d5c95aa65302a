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

func newDemoCommand(app App, g *globals) *cobra.Command {
	var config, profiles string
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
everything in it are gone when the demo ends.`,
		Example: `  make demo
  go run ./examples/host demo --config examples/host/config/statcan.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := registry(app)
			if err != nil {
				return err
			}
			name := app.DemoConfigName
			var cfg *hostconfig.Config
			if config != "" {
				name = config
				cfg, err = hostconfig.Load(config, reg)
			} else if app.DemoConfig == nil {
				return errors.New("--config is required: this binary has no built-in demo configuration")
			} else {
				cfg, err = hostconfig.Parse(name, app.DemoConfig, reg)
			}
			if err != nil {
				return err
			}
			// The narration is the demo's output; the controllers' logs (an
			// invalid label it provokes is logged as an error) only get in
			// its way unless asked for.
			logger := logr.Discard()
			if cmd.Flags().Changed("log-level") {
				if !cmd.Flags().Changed("log-format") {
					g.logFormat = "console"
				}
				if logger, err = g.newLogger(cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			root := local.RepoRoot()
			if profiles == "" {
				profiles = filepath.Join(root, "examples", "profiles")
			}
			return demo.Run(cmd.Context(), demo.Options{
				Config:      cfg,
				ConfigName:  name,
				Registry:    reg,
				RepoRoot:    root,
				AssetsDir:   local.AssetsDir(root),
				ProfilesDir: profiles,
				Out:         cmd.OutOrStdout(),
				Logger:      logger,
			})
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "host configuration file; default the built-in copy of examples/host/config/istio.yaml")
	cmd.Flags().StringVar(&profiles, "profiles", "", "folder of sample Profiles (*.yaml); default examples/profiles in the source tree")
	return cmd
}
