package local

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
)

// Host is the host's manager running in-process.
type Host struct {
	// Manager is the running manager; its client reads from the host's
	// caches.
	Manager manager.Manager

	exited chan struct{}
	err    error // what the manager returned, once exited is closed
	stop   func() error
}

// Stop stops the host and returns what its manager returned. It may be
// called more than once.
func (h *Host) Stop() error { return h.stop() }

// Exited is closed when the manager has stopped, by Stop or on its own (a
// port that cannot be served); Stop then says why.
func (h *Host) Exited() <-chan struct{} { return h.exited }

// HostOption changes how StartHost builds the host's manager.
type HostOption func(*server.Options)

// WithPageWrapper wraps the tenant page's handler (see AsUser), when the
// configuration serves the page.
func WithPageWrapper(wrap func(http.Handler) http.Handler) HostOption {
	return func(o *server.Options) { o.WrapPage = wrap }
}

// StartHost builds the host's manager for cfg as `profilekit run` does,
// with leader election, metrics and probes off, starts it and waits up to
// two minutes for its caches. restCfg is used as given, so that a caller
// may wrap its transport (the benchmark counts requests). A manager that
// stops before its caches sync is reported with its error.
func StartHost(ctx context.Context, restCfg *rest.Config, cfg *hostconfig.Config, reg *plugins.Registry, logger logr.Logger, opts ...HostOption) (*Host, error) {
	so := server.Options{
		MetricsAddr:        "0",
		ProbeAddr:          "0",
		Logger:             logger,
		SkipNameValidation: true,
	}
	for _, o := range opts {
		o(&so)
	}
	mgr, err := server.NewManager(restCfg, cfg, reg, so)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(log.IntoContext(ctx, logger))
	h := &Host{Manager: mgr, exited: make(chan struct{})}
	go func() {
		h.err = mgr.Start(ctx)
		close(h.exited)
	}()
	h.stop = sync.OnceValue(func() error {
		cancel()
		<-h.exited
		return h.err
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer syncCancel()
	go func() {
		select {
		case <-h.exited:
			syncCancel()
		case <-syncCtx.Done():
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		select {
		case <-h.exited:
			cancel()
			return nil, errors.Join(errors.New("the host stopped before its caches synced"), h.err)
		default:
		}
		_ = h.Stop()
		return nil, errors.New("the host's caches did not sync within 2m")
	}
	return h, nil
}
