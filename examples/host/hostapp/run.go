package hostapp

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/logs"
	"github.com/profilekit/profilekit/examples/host/internal/rollout"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
)

type runFlags struct {
	config         string
	kubeconfig     string
	metricsAddr    string
	probeAddr      string
	pprofAddr      string
	leaderElection bool
	qps            float32
	burst          int
}

func newRunCommand(app App, g *globals) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run --config host.yaml",
		Short: "Run one controller per enabled plugin against a cluster",
		Long: `run starts a controller for every plugin the configuration file enables and
serves Profiles until it is stopped (SIGINT or SIGTERM).

The configuration is checked before anything else: a file with an unknown
field, a bad selector or plugin defaults that do not validate stops the host
with an error that names the file, the field and the problem, and exit code 1.

Only one replica reconciles at a time (leader election on a Lease); the others
wait. /healthz answers once the process runs, /readyz once its caches hold the
cluster's state; Prometheus metrics include controller-runtime's
controller_runtime_reconcile_total{controller="profilekit-<kind>"} and
profilekit_plugin_* counters.

With a rollout section in the configuration, a change of the plugin sections
since the last start reaches the Profiles in batches, and a failing batch
pauses it; the ConfigMap profilekit-rollout in the host's namespace says where
it stands (see "Staged rollouts" in examples/host/docs/configuration.md).

The cluster is the one --kubeconfig names, else $KUBECONFIG, else the
in-cluster service account, else ~/.kube/config.`,
		Example: `  profilekit run --config /etc/profilekit/host.yaml
  profilekit run --config host.yaml --kubeconfig ~/.kube/dev --leader-elect=false --log-format console`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, reg, err := loadConfig(app, f.config)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("kube-api-qps") {
				cfg.Client.QPS = f.qps
			}
			if cmd.Flags().Changed("kube-api-burst") {
				cfg.Client.Burst = f.burst
			}
			if err := logs.CheckRate(cfg.Client.QPS, cfg.Client.Burst, cmd.Flags().Changed("kube-api-burst")); err != nil {
				return err
			}
			if float32(cfg.Client.Burst) < cfg.Client.QPS {
				// A raised --kube-api-qps alone lifts the burst with it.
				cfg.Client.Burst = int(cfg.Client.QPS + 0.5)
			}
			if f.leaderElection && cfg.LeaderElection.Namespace == "" && !inCluster() {
				return fmt.Errorf("%s: leaderElection.namespace: empty, and outside a cluster the host cannot tell its own namespace; set it, or pass --leader-elect=false", f.config)
			}
			logger, err := g.newLogger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			// Libraries that log through controller-runtime's global logger
			// (the metrics server) or through klog (client-go: the leader
			// elector, reflectors, throttling notices) get the same one, so
			// that every line has the host's format and level.
			// What the stop itself causes is no error (see quietStop).
			logger = quietStop(cmd.Context(), logger)
			ctrl.SetLogger(logger)
			if app.OwnsProcess {
				klog.SetLogger(logger)
			}
			restCfg, err := restConfig(f.kubeconfig)
			if err != nil {
				return err
			}
			// A staged rollout under way makes the reconcilers serve
			// two configurations: it is read before they are made.
			staged, err := prepareRollout(cmd.Context(), restCfg, cfg, reg)
			if err != nil {
				return err
			}
			mgr, err := server.NewManager(restCfg, cfg, reg, server.Options{
				MetricsAddr:    f.metricsAddr,
				ProbeAddr:      f.probeAddr,
				PprofAddr:      f.pprofAddr,
				LeaderElection: f.leaderElection,
				Logger:         logger,
			})
			if err != nil {
				return err
			}
			if err := staged.Add(mgr); err != nil {
				return err
			}
			ctx := log.IntoContext(cmd.Context(), logger)
			logger.Info("starting", "version", Version(app.Version), "config", f.config, "plugins", cfg.Enabled(),
				"leaderElection", f.leaderElection, "leaseID", cfg.LeaderElection.ID,
				"qps", cfg.Client.QPS, "burst", cfg.Client.Burst, "resync", cfg.Resync().String())
			if err := mgr.Start(ctx); err != nil {
				return fmt.Errorf("manager: %w", err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "host configuration file (required); see examples/host/docs/configuration.md for every field")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster; empty uses $KUBECONFIG, the in-cluster service account, then ~/.kube/config")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus /metrics endpoint; "0" turns it off`)
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", `address of the /healthz and /readyz endpoints; "0" turns them off`)
	fl.StringVar(&f.pprofAddr, "pprof-bind-address", "0", `address of Go's /debug/pprof endpoints (heap, CPU, goroutines), for diagnosis; "0" turns them off`)
	fl.BoolVar(&f.leaderElection, "leader-elect", true, "wait for the Lease named by leaderElection.id before reconciling, so that only one replica writes")
	fl.Float32Var(&f.qps, "kube-api-qps", 0, "sustained requests per second to the API server; overrides client.qps (default 100)")
	fl.IntVar(&f.burst, "kube-api-burst", 0, "request burst to the API server; overrides client.burst (default 200)")
	return cmd
}

// prepareRollout reads the state of the host's staged rollouts, when the
// configuration has rollout settings (see package rollout).
func prepareRollout(ctx context.Context, restCfg *rest.Config, cfg *hostconfig.Config, reg *plugins.Registry) (*rollout.Rollout, error) {
	if cfg.Rollout == nil {
		return nil, nil
	}
	s, err := server.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(restCfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("rollout: %w", err)
	}
	return rollout.Prepare(ctx, c, cfg, reg)
}

// clusterClient returns an uncached client of the cluster kubeconfig names
// (see restConfig), with the host's scheme s.
func clusterClient(kubeconfig string, s *runtime.Scheme) (client.Client, error) {
	restCfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := client.New(restCfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return c, nil
}

// restConfig returns the client configuration for kubeconfig, or the usual
// search (KUBECONFIG, in-cluster, home folder) when it is empty.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("find the cluster: %w", err)
	}
	return c, nil
}

// serviceAccountNamespace is where a pod finds its namespace, which is where
// the Lease goes when the configuration names none.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func inCluster() bool {
	_, err := os.Stat(serviceAccountNamespace)
	return err == nil
}
