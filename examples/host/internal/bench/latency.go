package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Latency probes: Profiles created one at a time, each after the previous
// one was ready or timed out, as users who sign up one after another.
const (
	// probePrefix starts the names of the probes' Profiles. The host's
	// request counters leave out requests on them (see counter), so that the
	// phase they run in keeps its own figures.
	probePrefix = "probe-"
	// probeTimeout is how long one probe waits for its Profile.
	probeTimeout = 60 * time.Second
	// idleProbes, rolloutProbes and bulkProbes are the Profiles created
	// with the host idle, while a host-wide change rolls out, and while a
	// bulk convergence is under way.
	idleProbes    = 30
	rolloutProbes = 10
	bulkProbes    = 10
	// bulkProbeDelay is how long after the bulk creation of the Profiles
	// ended the bulk probe creates its first one.
	bulkProbeDelay = 3 * time.Second
)

// isProbePath reports whether a request's path names a probe's Profile or
// its namespace.
func isProbePath(path string) bool { return strings.Contains(path, "/"+probePrefix) }

// NewProfileLatency is the time from a new Profile's creation until every
// condition it should get, the Profile-level Ready included, is True,
// followed through a watch. Each set creates its Profiles one at a time.
type NewProfileLatency struct {
	// Regime is the regime whose host served the probes.
	Regime string `json:"regime"`
	// TimeoutSeconds is how long one Profile was waited for; a Profile not
	// ready by then counts in NotReady and as the timeout in the quantiles.
	TimeoutSeconds float64 `json:"timeoutSeconds"`
	// Idle: with every Profile converged and the host idle.
	Idle *Latency `json:"idle,omitempty"`
	// Rollout: from right after the restarted host's caches synced, while
	// the host-wide change rolls out.
	Rollout *Latency `json:"rollout,omitempty"`
	// Bulk: from bulkProbeDelay after the bulk creation of the N Profiles
	// ended, while they converge.
	Bulk *Latency `json:"bulk,omitempty"`
}

// Latency is one set of new Profiles.
type Latency struct {
	Quantiles
	// NotReady counts the Profiles not ready within the timeout.
	NotReady int `json:"notReady"`
	// Seconds is each Profile's time, in creation order.
	Seconds []float64 `json:"seconds"`
}

// probe creates n Profiles named prefix-00001... one at a time, each after
// the previous one is ready or timed out, and times each from its creation
// until every condition it should get is True.
func (b *bench) probe(ctx context.Context, prefix string, n int) (*Latency, error) {
	var ds []time.Duration
	l := &Latency{}
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := Profile(probePrefix+prefix, i+1)
		d, ok, err := b.probeOne(ctx, p)
		if err != nil {
			return nil, err
		}
		if !ok {
			l.NotReady++
		}
		ds = append(ds, d)
		l.Seconds = append(l.Seconds, d.Seconds())
	}
	l.Quantiles = quantiles(ds)
	return l, nil
}

// probeOne creates p and waits, through a watch started before the
// creation, until every condition it should get is True. It returns the
// time taken, or the timeout and false.
func (b *bench) probeOne(ctx context.Context, p *kubeflowv1.Profile) (time.Duration, bool, error) {
	want := append(b.conditionsFor(p), plugins.ConditionReady)
	if _, core := b.cfg.Section(plugins.CoreKind); !core {
		// Without the core plugin the namespace is not the host's to make:
		// it exists before the Profile, as for the benchmark's Profiles.
		if err := b.createNamespaces(ctx, []string{p.Name}); err != nil {
			return 0, false, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	w, err := b.driver.Watch(ctx, &kubeflowv1.ProfileList{}, client.MatchingFields{"metadata.name": p.Name})
	if err != nil {
		return 0, false, fmt.Errorf("watch Profile %s: %w", p.Name, err)
	}
	defer w.Stop()
	start := time.Now()
	if err := b.driver.Create(ctx, p); err != nil {
		return 0, false, fmt.Errorf("create Profile %s: %w", p.Name, err)
	}
	for {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				// The server ended the watch early; follow the Profile
				// from its current version.
				w.Stop()
				if ctx.Err() != nil {
					return probeTimeout, false, nil
				}
				if w, err = b.driver.Watch(ctx, &kubeflowv1.ProfileList{}, client.MatchingFields{"metadata.name": p.Name}); err != nil {
					if ctx.Err() != nil {
						return probeTimeout, false, nil
					}
					return 0, false, fmt.Errorf("watch Profile %s: %w", p.Name, err)
				}
				continue
			}
			got, isProfile := ev.Object.(*kubeflowv1.Profile)
			if isProfile && (ev.Type == watch.Added || ev.Type == watch.Modified) && ready(got, want) {
				return time.Since(start), true, nil
			}
		case <-ctx.Done():
			return probeTimeout, false, nil
		}
	}
}

// printLatency prints one set of probes.
func (b *bench) printLatency(what string, l *Latency) {
	fmt.Fprintf(b.Out, "%s: %d Profiles one at a time, p50 %s, p99 %s, max %s, %d not ready within %s\n",
		what, l.N, secs(l.P50), secs(l.P99), secs(l.Max), l.NotReady, probeTimeout)
}

// bulkProbe runs the bulk probe from bulkProbeDelay after created (the end
// of the bulk creation), in the background; the returned function waits for
// it and returns its result.
func (b *bench) bulkProbe(ctx context.Context, created time.Time) func() (*Latency, error) {
	return b.probeFrom(ctx, created.Add(bulkProbeDelay), "bulk", bulkProbes)
}

// probeFrom runs a probe of n Profiles from at on, in the background; the
// returned function waits for it and returns its result.
func (b *bench) probeFrom(ctx context.Context, at time.Time, prefix string, n int) func() (*Latency, error) {
	type result struct {
		l   *Latency
		err error
	}
	done := make(chan result, 1)
	go func() {
		select {
		case <-ctx.Done():
			done <- result{err: ctx.Err()}
			return
		case <-time.After(time.Until(at)):
		}
		l, err := b.probe(ctx, prefix, n)
		done <- result{l, err}
	}()
	return func() (*Latency, error) {
		r := <-done
		return r.l, r.err
	}
}
