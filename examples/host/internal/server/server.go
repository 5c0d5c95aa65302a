// Package server builds the host's controller-runtime manager: the cache
// restricted to what profilekit labels, one standalone reconciler per enabled
// plugin, leader election, health and readiness probes, and metrics.
package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	istioscheme "istio.io/client-go/pkg/clientset/versioned/scheme"

	"github.com/profilekit/profilekit/api/kubeflow"
	"github.com/profilekit/profilekit/examples/host/internal/admission"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/page"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/volumes"
	"github.com/profilekit/profilekit/reconcilers"
)

// Options are the process-level settings that come from flags, not from the
// configuration file.
type Options struct {
	// MetricsAddr is where Prometheus metrics are served; "0" turns them off.
	MetricsAddr string
	// ProbeAddr is where /healthz and /readyz are served; "0" turns them off.
	ProbeAddr string
	// PprofAddr is where Go's /debug/pprof endpoints are served; empty or
	// "0" turns them off.
	PprofAddr string
	// LeaderElection makes the manager wait for the Lease before it reconciles.
	LeaderElection bool
	// Logger is the manager's logger.
	Logger logr.Logger
	// SkipNameValidation lets several managers with the same controller names
	// live in one process (the demo and tests).
	SkipNameValidation bool
	// WrapPage, when set, wraps the tenant page's handler: `profilekit
	// local` names its user there for requests from the machine itself.
	// The page's own checks run as they do without it.
	WrapPage func(http.Handler) http.Handler
}

// NewScheme returns the scheme the host reads and writes with: the built-in
// kinds, the Profile API and Istio's kinds. Kinds it does not know are handled
// as unstructured objects.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	err := errors.Join(clientgoscheme.AddToScheme(s), kubeflow.AddToScheme(s), istioscheme.AddToScheme(s))
	if err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	return s, nil
}

// NewManager returns a manager with a controller for every plugin that cfg
// enables. It fails when a plugin's defaults do not decode, so that a host
// with bad configuration never starts.
func NewManager(restCfg *rest.Config, cfg *hostconfig.Config, reg *plugins.Registry, opts Options) (manager.Manager, error) {
	s, err := NewScheme()
	if err != nil {
		return nil, err
	}
	rc := reconcilers.RateLimited(restCfg, cfg.Client.QPS, cfg.Client.Burst)
	rc = reconcilers.LimitInFlight(reconcilers.LeanApplies(rc), cfg.Client.MaxInFlight)
	mopts := manager.Options{
		Scheme:                        s,
		Logger:                        opts.Logger,
		Cache:                         withHostConfigMaps(withApplicationNamespaces(reconcilers.CacheOptions(cfg.Shard(), cfg.UnshardedNamespaces()...), cfg, reg), cfg, reg),
		Client:                        reconcilers.ClientOptions(),
		MapperProvider:                reconcilers.NewRESTMapper,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:        opts.ProbeAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              cfg.LeaderElection.ID,
		LeaderElectionNamespace:       cfg.LeaderElection.Namespace,
		LeaderElectionReleaseOnCancel: true,
	}
	lease, renew, retry := cfg.LeaderElection.Timings()
	mopts.LeaseDuration, mopts.RenewDeadline, mopts.RetryPeriod = &lease, &renew, &retry
	var leasing leasingManager
	if opts.LeaderElection {
		leasing.lock, leasing.events, err = leaseLock(restCfg, cfg, s, renew)
		if err != nil {
			return nil, err
		}
		leasing.timeout = renew
		mopts.LeaderElectionResourceLockInterface = leasing.lock
	}
	var selfSigned *admission.SelfSigned
	if cfg.Webhook.Enabled {
		mopts.WebhookServer, selfSigned, err = webhookServer(rc, cfg, s)
		if err != nil {
			return nil, err
		}
	}
	if opts.SkipNameValidation {
		skip := true
		mopts.Controller.SkipNameValidation = &skip
	}
	mgr, err := ctrl.NewManager(rc, mopts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if leasing.lock != nil {
		leasing.Manager = mgr
		mgr = leasing
	}
	var retired []string
	for _, kind := range cfg.Off() {
		if def, ok := reg.Get(kind); ok {
			retired = append(retired, def.Condition())
		}
	}
	status, err := reconcilers.NewStatusWriter(mgr, 0, reconcilers.WithRetired(retired...))
	if err != nil {
		return nil, err
	}
	precedence := reconcilers.WithPrecedence(reconcilers.NewPrecedence(cfg.Client.Precedence()))
	var defs []plugins.Definition
	for _, kind := range cfg.Enabled() {
		def, ok := reg.Get(kind)
		if !ok {
			return nil, fmt.Errorf("plugin %s: not built into this host", kind)
		}
		defs = append(defs, def)
	}
	if slices.ContainsFunc(defs, func(d plugins.Definition) bool { return d.OutsideState }) {
		err := mgr.Add(records{client: mgr.GetClient(), reader: mgr.GetAPIReader(), namespace: cfg.RecordsNamespace()})
		if err != nil {
			return nil, fmt.Errorf("add the outside-state records: %w", err)
		}
	}
	// A kind one plugin (or the page) reads whole is cached whole for
	// every plugin.
	wholeKinds := reconcilers.WholeKinds(defs...)
	if cfg.Page.Enabled {
		wholeKinds = append(wholeKinds, page.WholeKinds...)
	}
	whole := reconcilers.WithCachedWhole(wholeKinds...)
	for _, def := range defs {
		kind := def.Kind()
		if err := served(mgr.GetRESTMapper(), def, s); err != nil {
			return nil, err
		}
		opts := append(cfg.ReconcilerOptions(kind), reconcilers.WithStatusWriter(status), whole, precedence)
		first := reconcilers.NewFirstPass()
		if kind == volumes.Kind {
			opts = append(opts, reconcilers.WithFirstPass(first))
		}
		r, err := reconcilers.New(mgr, def, opts...)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", kind, err)
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("plugin %s: set up controller: %w", kind, err)
		}
		if kind == volumes.Kind {
			if err := addSweeper(mgr, cfg, def, first); err != nil {
				return nil, err
			}
		}
	}
	if cfg.Webhook.Enabled {
		if err := addWebhook(mgr, cfg, reg, s, selfSigned); err != nil {
			return nil, err
		}
	}
	if cfg.Page.Enabled {
		if err := addPage(mgr, cfg, wholeKinds, opts.WrapPage); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers", cacheSynced(mgr)); err != nil {
		return nil, fmt.Errorf("add readiness check: %w", err)
	}
	return mgr, nil
}

// served checks that the cluster serves every kind the plugin writes or
// watches. Without the check, a missing CRD shows only as a cache that never
// syncs, minutes after start-up.
func served(mapper meta.RESTMapper, def plugins.Definition, s *runtime.Scheme) error {
	gvks := slices.Clone(def.Owns)
	for _, w := range def.Watches {
		gvk, err := apiutil.GVKForObject(w.Object, s)
		if err != nil {
			return fmt.Errorf("plugin %s: watched object: %w", def.Kind(), err)
		}
		gvks = append(gvks, gvk)
	}
	var errs []error
	for _, gvk := range gvks {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case meta.IsNoMatchError(err):
			errs = append(errs, fmt.Errorf("plugin %s: the cluster does not serve %s: install its CRD, or set plugins.%s.enabled: off", def.Kind(), gvk, def.Kind()))
		case err != nil:
			errs = append(errs, fmt.Errorf("plugin %s: look up %s: %w", def.Kind(), gvk, err))
		}
	}
	return errors.Join(errs...)
}

// cacheSynced is ready once the informers the host has started hold the
// cluster's state, so that a rolling update does not route to a replica that
// is still listing Profiles.
func cacheSynced(mgr manager.Manager) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informers not synced")
		}
		return nil
	}
}
