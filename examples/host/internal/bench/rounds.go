package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// runFirst runs every phase in the first regime: the floors, convergence
// (with the bulk latency probe), the resync with nothing changed, drift,
// memory, and the host-wide change (with the rollout probe), then the idle
// latency probe.
func (b *bench) runFirst(ctx context.Context) error {
	fmt.Fprintf(b.Out, "\n==== regime %s: client %g QPS / %d burst, every phase\n", b.regime, b.QPS, b.Burst)
	if err := b.open(ctx); err != nil {
		return err
	}
	defer b.close()
	profiles, d, err := b.prepare(ctx)
	if err != nil {
		return err
	}
	b.extraProfiles = warmUpProfiles
	if b.Latency {
		b.res.Latency = &NewProfileLatency{Regime: b.regime, TimeoutSeconds: probeTimeout.Seconds()}
		b.extraProfiles += bulkProbes
	}
	h, err := b.startHost(ctx)
	if err != nil {
		return err
	}
	defer func() { b.stop(h) }()
	if err := b.converge(ctx, h, profiles, d); err != nil {
		return err
	}
	b.stop(h)
	if h, err = b.steadyState(ctx); err != nil {
		return err
	}
	if err := b.drift(ctx, d); err != nil {
		return err
	}
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.Name
	}
	var c *child
	if b.HostProcess {
		dir, err := os.MkdirTemp("", "profilekit-bench-")
		if err != nil {
			return fmt.Errorf("temporary folder: %w", err)
		}
		defer os.RemoveAll(dir)
		fmt.Fprintf(b.Out, "\n== host process: profilekit run, alone, against the same control plane\n")
		start := time.Now()
		if c, err = b.startChild(ctx, dir); err != nil {
			return err
		}
		defer c.stop()
		if err := b.waitPass(ctx, c); err != nil {
			return fmt.Errorf("%w\n%s", err, c.tail())
		}
		fmt.Fprintf(b.Out, "started and reconciled every Profile in %s\n", time.Since(start).Round(time.Millisecond))
	}
	if err := b.memory(ctx, h, c, names); err != nil {
		return err
	}
	// The host-wide change runs one host, with the new configuration.
	b.stop(h)
	if c != nil {
		c.stop()
	}
	h, err = b.hostWideChange(ctx)
	if err != nil {
		return err
	}
	if b.Latency {
		fmt.Fprintf(b.Out, "\n== new Profiles with the host idle\n")
		if err := waitIdle(ctx, b.Timeout); err != nil {
			return err
		}
		l, err := b.probe(ctx, "idle", idleProbes)
		if err != nil {
			return err
		}
		b.res.Latency.Idle = l
		b.printLatency("idle", l)
	}
	return nil
}

// runOther runs a further regime on a fresh control plane: its floors, the
// convergence and the host-wide change.
func (b *bench) runOther(ctx context.Context) (Regime, error) {
	fmt.Fprintf(b.Out, "\n==== regime %s: client %g QPS / %d burst, on a fresh control plane: floors, convergence, host-wide change\n", b.regime, b.QPS, b.Burst)
	if err := b.open(ctx); err != nil {
		return Regime{}, err
	}
	defer b.close()
	profiles, d, err := b.prepare(ctx)
	if err != nil {
		return Regime{}, err
	}
	h, err := b.startHost(ctx)
	if err != nil {
		return Regime{}, err
	}
	defer func() { b.stop(h) }()
	if err := b.converge(ctx, h, profiles, d); errors.Is(err, errIncomplete) {
		return regimeOf(b.regime, b.res, "fresh"), nil
	} else if err != nil {
		return Regime{}, err
	}
	b.stop(h)
	if h, err = b.hostWideChange(ctx); err != nil {
		return Regime{}, err
	}
	return regimeOf(b.regime, b.res, "fresh"), nil
}

// moreRounds measures regime g's floors and convergence Rounds-1 times
// more, each round as a regime after the first runs (without profiles),
// and adds every round's figures, g's first, and their medians to g.
func (o Options) moreRounds(ctx context.Context, g Regime) (Regime, error) {
	if o.Rounds <= 1 {
		return g, nil
	}
	g.Rounds = []Round{roundOf(g)}
	quiet := o
	quiet.CPUProfile, quiet.RolloutCPUProfile, quiet.HeapProfile, quiet.APIServerProfile = "", "", "", ""
	for i := 2; i <= o.Rounds; i++ {
		fmt.Fprintf(o.Out, "\n==== regime %s, round %d of %d\n", g.Name, i, o.Rounds)
		r, err := newBench(quiet, &Result{Profiles: o.Profiles}, g.Name).runOther(ctx)
		if err != nil {
			return g, fmt.Errorf("regime %s, round %d: %w", g.Name, i, err)
		}
		g.Rounds = append(g.Rounds, roundOf(r))
	}
	m := medianRound(g.Rounds)
	g.Median = &m
	return g, nil
}
