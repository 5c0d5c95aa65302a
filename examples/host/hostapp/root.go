package hostapp

// This file holds App, Main and the root command with the flags every
// command shares.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/logs"
	"github.com/profilekit/profilekit/examples/host/internal/progress"
	"github.com/profilekit/profilekit/plugins"
)

// App is what the binary is built with.
type App struct {
	// Name is the binary's name in its help and error messages. Default
	// "profilekit".
	Name string
	// Definitions are the plugins compiled in. A configuration file may
	// enable any of them, and no other.
	Definitions []plugins.Definition
	// Version is the binary's version, set at link time or read from the
	// build information.
	Version string
	// Revision is the source revision, set at link time; without it,
	// version prints the VCS revision of the build information, if any.
	Revision string
	// DemoConfig is the configuration the demo runs with when --config is
	// not given, and DemoConfigName names it in messages. Without it, demo
	// needs --config.
	DemoConfig     []byte
	DemoConfigName string
	// OwnsProcess says that the command line is the process's own, not one
	// of several run in it (as in tests): run then also routes klog, which
	// is process-wide and must be set before other goroutines log, through
	// the host's logger.
	OwnsProcess bool
}

// Main runs the command line with args (without the program name) and
// returns the process exit code: 0 on success, 1 on any error, which is
// printed to stderr, unless the command asks for another (diff: 1 when
// something would change, 2 on errors).
func Main(ctx context.Context, app App, args []string, stdout, stderr io.Writer) int {
	cmd := NewCommand(app, stdout, stderr)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		code, show := exitStatus(err)
		if show {
			fmt.Fprintf(stderr, "%s: %v\n", cmd.Name(), err)
		}
		return code
	}
	return 0
}

// globals are the flags every command shares, and how it tells a terminal.
type globals struct {
	logLevel  string
	logFormat string
	// terminal reports whether a writer is a terminal, where diff, release
	// and validate show their progress (progress.IsTerminal; tests say).
	terminal func(io.Writer) bool
}

// NewCommand returns the root command.
func NewCommand(app App, stdout, stderr io.Writer) *cobra.Command {
	return newCommand(app, stdout, stderr, &globals{terminal: progress.IsTerminal})
}

func newCommand(app App, stdout, stderr io.Writer, g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   cmp.Or(app.Name, "profilekit"),
		Short: "Run profilekit plugins for Kubeflow Profiles",
		Long: `profilekit runs reusable per-Profile plugins (quotas, limit ranges, RBAC, ...)
for Kubeflow Profiles, one controller per plugin, configured by one YAML file.

  profilekit run --config host.yaml              run the controllers against a cluster
  profilekit render --config host.yaml -f p.yaml show what they would write, offline
  profilekit validate --config host.yaml -f p.yaml check Profiles as admission would
  profilekit diff --config new.yaml --all        show what a configuration would change, read-only
  profilekit release --config host.yaml          hand Profiles back to the upstream controller
  profilekit demo                                run everything on a local control plane
  profilekit local                               keep a local cluster with the page running until Ctrl-C`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info",
		"log verbosity: error, info, debug, or a number n to see logr levels up to V(n) (debug is 1)")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "json",
		"log encoding: json (structured, for log collectors) or console (for people)")
	root.AddCommand(
		newRunCommand(app, g),
		newRenderCommand(app),
		newValidateCommand(app, g),
		newReleaseCommand(app, g),
		newTenureCommand(app),
		newDiffCommand(app, g),
		newDemoCommand(app, g),
		newLocalCommand(app, g),
		newVersionCommand(app),
	)
	return root
}

// registry returns the compiled-in plugins by kind.
func registry(app App) (*plugins.Registry, error) {
	reg, err := plugins.NewRegistry(app.Definitions...)
	if err != nil {
		return nil, fmt.Errorf("plugins built into this host: %w", err)
	}
	return reg, nil
}

// loadConfig loads and validates a configuration file against the
// compiled-in plugins.
func loadConfig(app App, path string) (*hostconfig.Config, *plugins.Registry, error) {
	if path == "" {
		return nil, nil, errors.New("--config is required")
	}
	reg, err := registry(app)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := hostconfig.Load(path, reg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, reg, nil
}

// progress returns the progress line of total pieces of cmd's work (noun),
// drawn on its stderr when that is a terminal, else nil, which draws
// nothing.
func (g *globals) progress(cmd *cobra.Command, noun string, total int) *progress.Bar {
	return progress.Start(cmd.ErrOrStderr(), cmd.Name(), noun, total, progress.Options{Terminal: g.terminal})
}

// newLogger returns the logger the global flags ask for.
func (g *globals) newLogger(w io.Writer) (logr.Logger, error) {
	return logs.New(g.logLevel, g.logFormat, w)
}
