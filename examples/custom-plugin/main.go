// Command custom-plugin runs the welcome plugin (package welcome) in a
// controller-runtime manager of its own, without profilekit's host: the
// whole path from a plugin package to a running controller for an
// importer of profilekit.
//
//	go run ./examples/custom-plugin --kubeconfig ~/.kube/config --defaults defaults.yaml
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/api/kubeflow"
	"github.com/profilekit/profilekit/examples/custom-plugin/welcome"
	"github.com/profilekit/profilekit/reconcilers"
)

// options are the command's settings.
type options struct {
	// Defaults are the plugin's host defaults, as JSON.
	Defaults []byte
	// EnabledForAll applies the plugin to every Profile, not only to those
	// that list it in spec.plugins.
	EnabledForAll bool
	// MetricsAddr and ProbeAddr are where /metrics and /healthz listen; "0"
	// turns them off.
	MetricsAddr string
	ProbeAddr   string
	// QPS and Burst bound the requests to the API server, all API groups
	// together.
	QPS   float32
	Burst int
	// LeaderElection makes replicas take turns through a Lease in
	// LeaderElectionNamespace.
	LeaderElection          bool
	LeaderElectionNamespace string
}

func main() {
	var (
		o            options
		defaultsFile string
		qps          float64
	)
	flag.StringVar(&defaultsFile, "defaults", "", "YAML or JSON file with the welcome plugin's host defaults")
	flag.BoolVar(&o.EnabledForAll, "all", false, "apply the plugin to every Profile, not only those that list it")
	flag.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "address of /metrics; 0 turns it off")
	flag.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 turns them off")
	flag.Float64Var(&qps, "kube-api-qps", 100, "requests per second to the API server")
	flag.IntVar(&o.Burst, "kube-api-burst", 200, "request burst")
	flag.BoolVar(&o.LeaderElection, "leader-elect", false, "take a Lease before reconciling, so that one replica writes")
	flag.StringVar(&o.LeaderElectionNamespace, "leader-elect-namespace", "", "namespace of the Lease (default: the pod's own)")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	o.QPS = float32(qps)
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	if err := start(defaultsFile, o); err != nil {
		fmt.Fprintln(os.Stderr, "custom-plugin:", err)
		os.Exit(1)
	}
}

func start(defaultsFile string, o options) error {
	if defaultsFile != "" {
		data, err := os.ReadFile(defaultsFile)
		if err != nil {
			return err
		}
		if o.Defaults, err = yaml.YAMLToJSON(data); err != nil {
			return fmt.Errorf("%s: %w", defaultsFile, err)
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := newManager(cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// newManager returns a manager that runs the welcome plugin for Profiles.
// The manager's cache holds Profiles and only the objects profilekit
// labels (reconcilers.CacheOptions), so that the cluster's other
// ConfigMaps never reach memory.
func newManager(cfg *rest.Config, o options) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), kubeflow.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	// client-go would give each API group a limiter of its own, and its
	// default of 5 requests per second makes a first pass over thousands of
	// Profiles take hours.
	cfg = reconcilers.RateLimited(cfg, o.QPS, o.Burst)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   reconcilers.CacheOptions(nil),
		Client:                  reconcilers.ClientOptions(),
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        "welcome.profilekit.example",
		LeaderElectionNamespace: o.LeaderElectionNamespace,
	})
	if err != nil {
		return nil, err
	}
	if o.ProbeAddr != "0" {
		if err := errors.Join(mgr.AddHealthzCheck("ping", healthz.Ping), mgr.AddReadyzCheck("ping", healthz.Ping)); err != nil {
			return nil, err
		}
	}
	status, err := reconcilers.NewStatusWriter(mgr, 0)
	if err != nil {
		return nil, err
	}
	opts := []reconcilers.Option{reconcilers.WithDefaults(o.Defaults), reconcilers.WithStatusWriter(status)}
	if o.EnabledForAll {
		opts = append(opts, reconcilers.WithEnabledForAll(nil))
	}
	// New decodes and validates the host defaults now: a bad file stops
	// the command before it reconciles anything.
	r, err := reconcilers.New(mgr, welcome.Definition(), opts...)
	if err != nil {
		return nil, err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return mgr, nil
}
