package bench

// This file holds the host as the benchmark runs it: in-process, its
// requests counted, and how to wait until it is idle.

import (
	"context"
	"fmt"
	"time"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/local"
)

// host is the host running in-process, with the counter of its requests.
type host struct {
	*local.Host
	counter *counter
}

// stop stops the host and notes an error it ended with.
func (b *bench) stop(h *host) {
	if h == nil {
		return
	}
	if err := h.Stop(); err != nil {
		fmt.Fprintf(b.Out, "host: %v\n", err)
	}
}

// startHost starts the host with the run's configuration.
func (b *bench) startHost(ctx context.Context) (*host, error) {
	return b.startHostWith(ctx, b.cfg)
}

// startHostWith starts a host with cfg in place of the run's configuration,
// counting its requests.
func (b *bench) startHostWith(ctx context.Context, cfg *hostconfig.Config) (*host, error) {
	cnt := newHostCounter()
	h, err := local.StartHost(ctx, cnt.wrap(b.admin), cfg, b.reg, b.Logger)
	if err != nil {
		return nil, err
	}
	return &host{Host: h, counter: cnt}, nil
}

// waitIdle waits until no controller has queued or in-flight work for a
// whole second.
func waitIdle(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	quiet := 0
	for quiet < 5 {
		if time.Now().After(deadline) {
			return fmt.Errorf("controllers still busy after %s", timeout)
		}
		n, err := busyControllers()
		if err != nil {
			return err
		}
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}
