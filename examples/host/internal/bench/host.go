package bench

// This file holds the host as the benchmark runs it: in-process, its
// requests counted, and how to wait until it is idle.

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/profilekit/profilekit/examples/host/hostapp"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/local"
)

// host is the host running in-process, with the counter of its requests.
type host struct {
	*local.Host
	counter *counter
	// restoreGC sets the process's GOGC back to what it was before the
	// host started.
	restoreGC func()
}

// stop stops the host and notes an error it ended with.
func (b *bench) stop(h *host) {
	if h == nil {
		return
	}
	if err := h.Stop(); err != nil {
		fmt.Fprintf(b.Out, "host: %v\n", err)
	}
	h.restoreGC()
}

// hostGOGC is the GOGC the host runs with, as the result keeps it.
func hostGOGC() string {
	if v, set := os.LookupEnv("GOGC"); set {
		return v
	}
	return strconv.Itoa(hostapp.DefaultGCPercent)
}

// withHostGC sets the process's GOGC to the shipped binary's
// (hostapp.Run), unless the environment sets GOGC for the whole run, and
// returns what sets it back: the host runs with it, the floors' plain
// clients with Go's default, as a plain binary would.
func withHostGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(hostapp.DefaultGCPercent)
	return func() { debug.SetGCPercent(old) }
}

// startHost starts the host with the run's configuration.
func (b *bench) startHost(ctx context.Context) (*host, error) {
	return b.startHostWith(ctx, b.cfg)
}

// startHostWith starts a host with cfg in place of the run's configuration,
// counting its requests.
func (b *bench) startHostWith(ctx context.Context, cfg *hostconfig.Config) (*host, error) {
	cnt := newHostCounter()
	restore := withHostGC()
	h, err := local.StartHost(ctx, cnt.wrap(b.admin), cfg, b.reg, b.Logger)
	if err != nil {
		restore()
		return nil, err
	}
	return &host{Host: h, counter: cnt, restoreGC: restore}, nil
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
