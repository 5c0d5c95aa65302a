package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/profilekit/profilekit/examples/host/internal/bench"
	"github.com/profilekit/profilekit/examples/host/internal/demo"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
)

// newBenchCommand is hidden: it is a tool for people working on profilekit
// (make bench), not part of the host's interface.
func newBenchCommand(app App, g *globals) *cobra.Command {
	var (
		config, results string
		o               bench.Options
	)
	cmd := &cobra.Command{
		Use:    "bench",
		Hidden: true,
		Short:  "Measure the host on a local control plane (see bench/README.md)",
		Long: `bench starts a private kube-apiserver and etcd (envtest), runs the host
in-process with every plugin of the configuration, and measures, for
--profiles Profiles: convergence against a plain client creating the same
objects, requests by verb and resource (client side and the API server's
/metrics), mutating requests of a full resync with nothing changed (exit 1
when not 0), drift repair times, and memory before and after unrelated
Secrets and ConfigMaps. It prints a table and saves JSON under bench/results.`,
		Example: `  make bench
  make bench BENCH_FLAGS="--profiles 5000"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := registry(app)
			if err != nil {
				return err
			}
			o.ConfigName = app.DemoConfigName
			var cfg *hostconfig.Config
			if config != "" {
				o.ConfigName = config
				cfg, err = hostconfig.Load(config, reg)
			} else {
				cfg, err = hostconfig.Parse(o.ConfigName, app.DemoConfig, reg)
			}
			if err != nil {
				return err
			}
			if err := checkRate(o.QPS, o.Burst, true); err != nil {
				return err
			}
			o.Logger = logr.Discard()
			if cmd.Flags().Changed("log-level") {
				if o.Logger, err = g.newLogger(cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			// controller-runtime's global logger, used by libraries below
			// the manager, complains on stderr when never set.
			ctrl.SetLogger(o.Logger)
			root := repoRoot()
			o.Config, o.Registry, o.RepoRoot, o.Out = cfg, reg, root, cmd.OutOrStdout()
			o.AssetsDir = os.Getenv("KUBEBUILDER_ASSETS")
			if o.AssetsDir == "" {
				o.AssetsDir = filepath.Join(root, "bin", "k8s", demo.AssetsVersion)
			}
			if results == "" {
				results = filepath.Join(root, "bench", "results")
			}
			if results != "-" {
				o.ResultsDir = results
			}
			if o.Unrelated < 0 || o.Drift < 0 {
				return fmt.Errorf("--unrelated and --drift must not be negative")
			}
			return bench.Run(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&config, "config", "", "host configuration file; default the built-in copy of examples/host/config/istio.yaml (every plugin)")
	fl.IntVar(&o.Profiles, "profiles", 1000, "number of Profiles to converge")
	fl.Float32Var(&o.QPS, "kube-api-qps", 200, "client rate of the host and of the plain client that sets the floor")
	fl.IntVar(&o.Burst, "kube-api-burst", 400, "client burst of the host and of the plain client")
	fl.IntVar(&o.Concurrency, "concurrency", 0, "reconciles at once per plugin, for every plugin; 0 keeps the configuration's (default 4)")
	fl.IntVar(&o.Drift, "drift", 50, "owned objects to delete or edit by hand (half each)")
	fl.IntVar(&o.Unrelated, "unrelated", 10000, "unrelated Secrets and ConfigMaps (half each) added before the second memory reading")
	fl.BoolVar(&o.HostProcess, "host-process", true, "also run the host alone as `profilekit run` in a child process and read its memory")
	fl.Uint64Var(&o.Seed, "seed", 1, "seed that picks the drifted objects")
	fl.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "bound on each wait (convergence, resync, repairs)")
	fl.DurationVar(&o.ConvergeLimit, "converge-limit", 0, "stop convergence after this long, save how far it got and skip the later phases (exit 1); 0 waits up to --timeout")
	fl.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the host (and the benchmark's client) during convergence to this file")
	fl.StringVar(&o.HeapProfile, "heapprofile", "", "write a heap profile of the host (and the benchmark's client) with every Profile converged to this file, and one of the host process alone to the same name with .host added")
	fl.StringVar(&results, "results", "", `folder for the JSON result; default bench/results in the source tree, "-" for none`)
	return cmd
}
