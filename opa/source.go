package opa

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Source is a grants document that changes over time: an OPA gateway polled
// by a Poller, or a ConfigMap watched by a ConfigMapSource.
//
// A source only ever moves from one good snapshot to another. A refresh that
// fails (the server is unreachable, the document is undefined or malformed,
// or it would withdraw more than the allowed share of the current grants at
// once) keeps the last good snapshot, is counted in
// profilekit_grants_refresh_total, logged, and shows in State().Err until a
// refresh succeeds; consumers must then delete nothing.
type Source interface {
	// Name names the source in metrics, logs and conditions.
	Name() string
	// State returns the last good snapshot and how the last refresh went.
	State() State
	// Run refreshes the snapshot until ctx ends. It calls notify with the
	// namespaces whose grants changed, and with every namespace of the last
	// good snapshot when the source turns unhealthy or healthy again, so
	// that only those are reconciled. It returns nil when ctx ends.
	Run(ctx context.Context, notify func(namespaces []string)) error
}

// State is a source's last good snapshot and the outcome of its last refresh.
type State struct {
	// Grants is the last good snapshot.
	Grants Grants
	// Synced is true once a good snapshot was taken. Before that, Grants is
	// empty because nothing is known yet, not because nothing is granted.
	Synced bool
	// Err is why the last refresh was not taken, nil when it was. It is a
	// *RefreshError.
	Err error
	// Taken is when the last good snapshot was taken.
	Taken time.Time
}

// Refresh failure reasons, the reason label of the refresh metric.
const (
	ReasonUnreachable  = "Unreachable"
	ReasonUndefined    = "Undefined"
	ReasonMalformed    = "Malformed"
	ReasonMissing      = "Missing"
	ReasonDropTooLarge = "DropTooLarge"
)

// RefreshError is why a refresh was not taken.
type RefreshError struct {
	// Source names the source.
	Source string
	// Reason is one of the Reason constants.
	Reason string
	// Err is what went wrong.
	Err error
}

// Error says which source failed, why, and how.
func (e *RefreshError) Error() string {
	return fmt.Sprintf("grants source %s: %s: %v", e.Source, e.Reason, e.Err)
}

// Unwrap returns the cause.
func (e *RefreshError) Unwrap() error { return e.Err }

// DefaultMaxDropShare is the share of the current grants a refresh may
// withdraw at once.
const DefaultMaxDropShare = 0.5

// tracker holds a source's snapshot and applies the rules every source shares.
type tracker struct {
	name    string
	maxDrop float64

	mu    sync.Mutex
	state State
}

// offer takes a refresh's outcome: a document or the error that kept it from
// being read. It returns the namespaces to notify.
func (t *tracker) offer(ctx context.Context, g Grants, err error) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	logger := log.FromContext(ctx).WithValues("grantsSource", t.name)
	old := t.state
	if err == nil && old.Synced && old.Grants.Len() > 0 {
		dropped := Dropped(old.Grants, g)
		if share := float64(dropped) / float64(old.Grants.Len()); share > t.maxDrop {
			err = &RefreshError{Source: t.name, Reason: ReasonDropTooLarge, Err: fmt.Errorf(
				"the new document withdraws %d of %d grants (%.0f%%), more than the %.0f%% allowed at once; keeping the last good grants",
				dropped, old.Grants.Len(), 100*share, 100*t.maxDrop)}
		}
	}
	if err != nil {
		var re *RefreshError
		if !errors.As(err, &re) {
			re = &RefreshError{Source: t.name, Reason: ReasonUnreachable, Err: err}
		}
		refreshTotal.WithLabelValues(t.name, re.Reason).Inc()
		healthy.WithLabelValues(t.name).Set(0)
		// One log line per change of reason, not per poll.
		if old.Err == nil || old.Err.Error() != re.Error() {
			logger.Error(re, "grants refresh rejected, keeping the last good snapshot", "reason", re.Reason, "grants", old.Grants.Len())
		}
		wasHealthy := old.Err == nil
		t.state.Err = re
		if wasHealthy || old.Err.Error() != re.Error() {
			return t.notified(old.Grants.Namespaces())
		}
		return nil
	}
	refreshTotal.WithLabelValues(t.name, "OK").Inc()
	healthy.WithLabelValues(t.name).Set(1)
	buckets.WithLabelValues(t.name).Set(float64(len(g.buckets)))
	t.state = State{Grants: g, Synced: true, Taken: time.Now()}
	var ns []string
	switch {
	case !old.Synced:
		ns = g.Namespaces()
	case old.Err != nil:
		// Recovered: the Profiles that showed the error hear that it is gone.
		ns = slices.Compact(slices.Sorted(slices.Values(slices.Concat(old.Grants.Namespaces(), g.Namespaces()))))
		logger.Info("grants source recovered", "grants", g.Len())
	default:
		ns = Changed(old.Grants, g)
	}
	if len(ns) > 0 && old.Synced {
		logger.Info("grants changed", "namespaces", len(ns), "grants", g.Len())
	}
	return t.notified(ns)
}

func (t *tracker) notified(ns []string) []string {
	notifiedTotal.WithLabelValues(t.name).Add(float64(len(ns)))
	return ns
}

// State returns the last good snapshot and how the last refresh went.
func (t *tracker) State() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// Name names the source.
func (t *tracker) Name() string { return t.name }

// Options are the settings every source shares.
type Options struct {
	// Interval is how often a Poller asks. Default 30s.
	Interval time.Duration
	// MaxDropShare is the share (0 to 1) of the current grants one refresh
	// may withdraw; a refresh that withdraws more is rejected. Default 0.5.
	// 1 allows any drop, including to nothing.
	MaxDropShare float64
}

// DefaultInterval is how often a Poller asks by default.
const DefaultInterval = 30 * time.Second

func (o Options) withDefaults() (Options, error) {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.MaxDropShare == 0 {
		o.MaxDropShare = DefaultMaxDropShare
	}
	if o.Interval < 0 {
		return o, fmt.Errorf("interval %s: want a positive duration", o.Interval)
	}
	if o.MaxDropShare < 0 || o.MaxDropShare > 1 {
		return o, fmt.Errorf("maxDropShare %v: want a share between 0 and 1", o.MaxDropShare)
	}
	return o, nil
}
