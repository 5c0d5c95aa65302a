// Command bench measures the profilekit host on a local control plane (make
// bench; see bench/README.md). It is a tool for people working on
// profilekit, built apart from the profilekit binary that the image ships.
//
//	go run ./examples/host/bench --profiles 5000
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/bench"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/local"
	"github.com/profilekit/profilekit/examples/host/internal/logs"
	"github.com/profilekit/profilekit/plugins"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// defaultConfig is the configuration measured unless --config says
// otherwise, relative to the source tree: every plugin built in.
const defaultConfig = "examples/host/config/istio.yaml"

func newCommand() *cobra.Command {
	var (
		config, results, hostBinary, logLevel string
		o                                     bench.Options
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the profilekit host on a local control plane (see bench/README.md)",
		Long: `bench starts a private kube-apiserver and etcd (envtest), runs the host
in-process with every plugin of the configuration, and measures, for
--profiles Profiles, in two client rate regimes (limited and unthrottled,
each with its own floors): convergence against a plain client creating the
same objects with POST and one sending them as server-side applies,
requests by verb and resource (client side and the API server's /metrics),
status writes per Profile, mutating requests of a full resync with nothing
changed (exit 1 when not 0), drift repair times, memory before and after
unrelated Secrets and ConfigMaps, the rate of a host-wide change, and how
long a new Profile takes to be ready (idle, during the host-wide change,
during the bulk convergence). It prints a table and saves JSON under
bench/results.`,
		Example: `  make bench
  make bench BENCH_FLAGS="--profiles 5000"`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := plugins.NewRegistry(builtin.Definitions()...)
			if err != nil {
				return err
			}
			root := local.RepoRoot()
			o.ConfigName = config
			path := config
			if !filepath.IsAbs(path) && config == defaultConfig {
				path = filepath.Join(root, config)
			}
			cfg, err := hostconfig.Load(path, reg)
			if err != nil {
				return err
			}
			if err := logs.CheckRate(o.QPS, o.Burst, true); err != nil {
				return err
			}
			if o.Unrelated < 0 || o.Drift < 0 {
				return errors.New("--unrelated and --drift must not be negative")
			}
			o.Logger = logr.Discard()
			if logLevel != "" {
				if o.Logger, err = logs.New(logLevel, "console", cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			// controller-runtime's global logger, used by libraries below
			// the manager, complains on stderr when never set.
			ctrl.SetLogger(o.Logger)
			o.Config, o.Registry, o.RepoRoot, o.Out = cfg, reg, root, cmd.OutOrStdout()
			o.AssetsDir = local.AssetsDir(root)
			if results == "" {
				results = filepath.Join(root, "bench", "results")
			}
			if results != "-" {
				o.ResultsDir = results
			}
			if o.HostProcess {
				if hostBinary == "" {
					dir, err := os.MkdirTemp("", "profilekit-bench-")
					if err != nil {
						return err
					}
					defer os.RemoveAll(dir)
					if hostBinary, err = buildHost(cmd.Context(), root, dir); err != nil {
						return err
					}
				}
				o.HostBinary = hostBinary
			}
			return bench.Run(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&config, "config", defaultConfig, "host configuration file (every plugin it enables runs)")
	fl.IntVar(&o.Profiles, "profiles", 1000, "number of Profiles to converge")
	fl.Float32Var(&o.QPS, "kube-api-qps", 200, "client rate of the host and of the plain clients that set the floors, in the limited regime")
	fl.IntVar(&o.Burst, "kube-api-burst", 400, "client burst of the host and of the plain clients, in the limited regime")
	fl.StringSliceVar(&o.Regimes, "regimes", []string{bench.RegimeLimited, bench.RegimeUnthrottled},
		"client rate regimes to measure, in order: limited (--kube-api-qps/--kube-api-burst) and unthrottled (100000 both); the first runs every phase, each other its floors, convergence and host-wide change on a fresh control plane")
	fl.IntVar(&o.Rounds, "rounds", 1, "measure each regime's floors and convergence this many times, each round on fresh control planes, and compare the medians of the rounds' ratios with the targets")
	fl.BoolVar(&o.Latency, "latency", true, "time new Profiles created one at a time, in the first regime: idle, during the host-wide change and during the bulk convergence")
	fl.BoolVar(&o.FreshPhases, "fresh-phases", true, "run each floor and the convergence of a regime on an empty control plane of its own; false runs them one after another on the same one")
	fl.BoolVar(&o.WatchedFloor, "watched-floor", false, "also time the POST floor's client while a cache of the host's options watches what it writes, on a control plane of its own: what watching its own writes costs a controller")
	fl.IntVar(&o.Concurrency, "concurrency", 0, "reconciles at once per plugin, for every plugin; 0 keeps the configuration's (default 16)")
	fl.IntVar(&o.Drift, "drift", 50, "owned objects to delete or edit by hand (half each)")
	fl.IntVar(&o.Unrelated, "unrelated", 10000, "unrelated Secrets and ConfigMaps (half each) added before the second memory reading")
	fl.BoolVar(&o.HostProcess, "host-process", true, "also run the host alone as `profilekit run` in a child process and read its memory")
	fl.StringVar(&hostBinary, "host-binary", "", "the profilekit binary --host-process runs; default one built from ./examples/host for this run")
	fl.Uint64Var(&o.Seed, "seed", 1, "seed that picks the drifted objects")
	fl.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "bound on each wait (convergence, resync, repairs)")
	fl.DurationVar(&o.ConvergeLimit, "converge-limit", 0, "stop convergence after this long, save how far it got and skip the later phases (exit 1); 0 waits up to --timeout")
	fl.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the host (and the benchmark's client) during convergence to this file")
	fl.StringVar(&o.RolloutCPUProfile, "rollout-cpuprofile", "", "write a CPU profile of the host from the restart of the host-wide change until its last ResourceQuota changed to this file")
	fl.StringVar(&o.HeapProfile, "heapprofile", "", "write a heap profile of the host (and the benchmark's client) with every Profile converged to this file, and one of the host process alone to the same name with .host added")
	fl.StringVar(&o.APIServerProfile, "apiserver-cpuprofile", "", "write CPU profiles of kube-apiserver over the first --apiserver-profile-seconds of each floor and of the convergence to this file name with .<regime>.<phase> added")
	fl.IntVar(&o.APIServerProfileSeconds, "apiserver-profile-seconds", 30, "how long each kube-apiserver CPU profile runs")
	fl.StringVar(&results, "results", "", `folder for the JSON result; default bench/results in the source tree, "-" for none`)
	fl.StringVar(&logLevel, "log-level", "", "show the host's logs on stderr at this level (error, info, debug or a number); default none")
	cmd.AddCommand(newScaleCommand(), newExternalCommand())
	return cmd
}

// newExternalCommand measures another controller on a control plane of
// its own, for a side-by-side run (bench/README.md).
func newExternalCommand() *cobra.Command {
	var (
		o       bench.ExternalOptions
		want    map[string]int
		results string
	)
	cmd := &cobra.Command{
		Use:   "external [flags] -- COMMAND [ARG...]",
		Short: "Measure another controller on the same kind of control plane, for a side-by-side run",
		Long: `external starts a private kube-apiserver and etcd as bench does, installs
the --crds, starts COMMAND ("{kubeconfig}" in an argument becomes the path
of an administrator's kubeconfig, which KUBECONFIG also names), converges
one warm-up tenant, then creates --tenants tenants from --template (a YAML
file rendered per tenant with {{.Name}} and {{.Index}}) and times them
until every tenant's namespace holds the --want objects. It prints objects
per second, the controller's mutating requests per object (the API
server's own count, less the benchmark's requests and lease renewals), its
writes per minute once idle and its CPU, and saves them as JSON.`,
		Example: `  go run ./examples/host/bench external --tenants 1000 --template bench/external/capsule-tenant.yaml \
    --crds /path/to/capsule/charts/capsule/crds \
    --want resourcequotas=1,limitranges=1,networkpolicies=6,rolebindings=2 \
    -- /path/to/capsule/manager --kubeconfig {kubeconfig} --enable-leader-election=false`,
		Args:         cobra.MinimumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			root := local.RepoRoot()
			o.Command, o.Want, o.Out, o.AssetsDir = args, want, cmd.OutOrStdout(), local.AssetsDir(root)
			if results == "" {
				results = filepath.Join(root, "bench", "results")
			}
			if results != "-" {
				o.ResultsDir = results
			}
			_, err := bench.RunExternal(cmd.Context(), o)
			return err
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Tenants, "tenants", 1000, "tenants to converge")
	fl.StringVar(&o.Template, "template", "", "YAML file of one tenant's input, rendered for each tenant with {{.Name}} and {{.Index}}")
	fl.StringVar(&o.Namespace, "namespace", "{{.Name}}", "template of the namespace that holds a tenant's objects")
	fl.StringToIntVar(&want, "want", nil, "objects each tenant's namespace holds once converged, by resource (networkpolicies=6,rolebindings.rbac.authorization.k8s.io=2)")
	fl.StringSliceVar(&o.CRDs, "crds", nil, "files or folders of CustomResourceDefinitions to install before the controller starts")
	fl.IntVar(&o.Workers, "workers", 16, "tenants created at once")
	fl.DurationVar(&o.Idle, "idle", time.Minute, "how long the converged controller's writes are counted")
	fl.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "bound on the whole run")
	fl.StringVar(&o.WorkDir, "work-dir", "", "folder for the kubeconfig and the controller's log; default a new temporary one")
	fl.StringVar(&results, "results", "", `folder for the JSON result; default bench/results in the source tree, "-" for none`)
	return cmd
}

// newScaleCommand prints saved results of runs at different numbers of
// Profiles side by side.
func newScaleCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "scale RESULT.json...",
		Short: "Print saved results side by side, each cost per object against the smallest run's",
		Long: `scale reads results that bench saved and prints, as a Markdown table, each
figure of each run, the largest run's over the smallest's and the verdict
against the scale targets: every cost per object within 10% of the
smallest run's, the host alone at most 1.5 KiB of heap in use per owned
object, and its RSS growing by at most 2 KiB per owned object from the
smallest run to the largest. It exits 1 when a target is missed.`,
		Example:      `  go run ./examples/host/bench scale bench/results/*-n1000.json bench/results/*-n10000.json`,
		Args:         cobra.MinimumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := bench.ReadResults(args)
			if err != nil {
				return err
			}
			if !bench.WriteScale(cmd.OutOrStdout(), runs) {
				return errors.New("a scale target is missed")
			}
			return nil
		},
	}
}

// buildHost builds the profilekit binary from the source tree at root into
// dir: the same code as the in-process host when the bench runs from that
// tree (go run, make bench). The binary records the tree's commit where git
// can tell it, whatever GOFLAGS says, and the result names it.
func buildHost(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "profilekit")
	build := exec.CommandContext(ctx, "go", "build", "-buildvcs=auto", "-o", bin, "./examples/host")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the host binary for --host-process: %v\n%s", err, out)
	}
	return bin, nil
}
