package opa

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
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
	// Synced returns a channel that is closed once the source has taken
	// its first good snapshot, for consumers that reported "not synced" to
	// every Profile and must tell them all when that ends.
	Synced() <-chan struct{}
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
	// ReasonNoBaseline means that the first document after a start could
	// not be checked, because Options.Baseline failed.
	ReasonNoBaseline = "NoBaseline"
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

// tracker holds a source's snapshot and applies the rules every source
// shares. Offers are serialised by mu; readers load the snapshot from state
// and never wait, whatever an offer in progress is doing.
type tracker struct {
	name     string
	maxDrop  float64
	baseline func(context.Context) ([]Grant, error)

	mu     sync.Mutex
	state  atomic.Pointer[State]
	once   sync.Once
	synced chan struct{}
}

func newTracker(name string, o Options) tracker {
	return tracker{name: name, maxDrop: o.MaxDropShare, baseline: o.Baseline}
}

// offer takes a refresh's outcome: a document or the error that kept it from
// being read. It returns the namespaces to notify. The work (the drop guard,
// the diff) is done before the new snapshot is swapped in, so State() reads
// the old one meanwhile.
func (t *tracker) offer(ctx context.Context, g Grants, err error) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	logger := log.FromContext(ctx).WithValues("grantsSource", t.name)
	old := t.State()
	var base []string
	if err == nil {
		base, err = t.guard(ctx, old, g)
	}
	if err != nil {
		var re *RefreshError
		if !errors.As(err, &re) {
			re = &RefreshError{Source: t.name, Reason: ReasonUnreachable, Err: err}
		}
		refreshTotal.WithLabelValues(t.name, re.Reason).Inc()
		healthy.WithLabelValues(t.name).Set(0)
		// One log line per change of reason, not per poll.
		changed := old.Err == nil || old.Err.Error() != re.Error()
		if changed {
			logger.Error(re, "grants refresh rejected, keeping the last good snapshot", "reason", re.Reason, "grants", old.Grants.Len(), "synced", old.Synced)
		}
		next := old
		next.Err = re
		t.state.Store(&next)
		if changed {
			return t.notified(old.Grants.Namespaces())
		}
		return nil
	}
	refreshTotal.WithLabelValues(t.name, "OK").Inc()
	healthy.WithLabelValues(t.name).Set(1)
	buckets.WithLabelValues(t.name).Set(float64(len(g.buckets)))
	var ns []string
	switch {
	case !old.Synced:
		// The namespaces of the grants in use hear too: some lose a volume.
		ns = slices.Compact(slices.Sorted(slices.Values(slices.Concat(base, g.Namespaces()))))
	case old.Err != nil:
		// Recovered: the Profiles that showed the error hear that it is gone.
		ns = slices.Compact(slices.Sorted(slices.Values(slices.Concat(old.Grants.Namespaces(), g.Namespaces()))))
		logger.Info("grants source recovered", "grants", g.Len())
	default:
		ns = Changed(old.Grants, g)
	}
	t.state.Store(&State{Grants: g, Synced: true, Taken: time.Now()})
	if !old.Synced {
		close(t.syncedCh())
	}
	if len(ns) > 0 && old.Synced {
		logger.Info("grants changed", "namespaces", len(ns), "grants", g.Len())
	}
	return t.notified(ns)
}

// guard refuses a document that would withdraw more than the allowed share
// of the grants in use: the last good snapshot, or, before there is one
// (the first document after a start), the grants the baseline says the
// cluster holds. It returns the baseline's namespaces.
func (t *tracker) guard(ctx context.Context, old State, g Grants) ([]string, error) {
	var dropped, total int
	var ns []string
	refusal := "the new document withdraws %d of %d grants (%.0f%%), more than the %.0f%% allowed at once; keeping the last good grants"
	switch {
	case old.Synced:
		dropped, total = Dropped(old.Grants, g), old.Grants.Len()
	case t.baseline != nil:
		inUse, err := t.baseline(ctx)
		if err != nil {
			return nil, &RefreshError{Source: t.name, Reason: ReasonNoBaseline, Err: fmt.Errorf(
				"read the grants in use, which the first document after a start is checked against: %w; nothing is taken until they can be read", err)}
		}
		dropped, total = DroppedFrom(inUse, g)
		for _, b := range inUse {
			ns = append(ns, b.Namespace)
		}
		refusal = "the first document since the start withdraws %d of %d grants in use in the cluster (%.0f%%), more than the %.0f%% allowed at once; nothing is taken until a document within that share arrives"
	}
	if total == 0 {
		return ns, nil
	}
	if share := float64(dropped) / float64(total); share > t.maxDrop {
		return ns, &RefreshError{Source: t.name, Reason: ReasonDropTooLarge, Err: fmt.Errorf(refusal, dropped, total, 100*share, 100*t.maxDrop)}
	}
	return ns, nil
}

func (t *tracker) notified(ns []string) []string {
	notifiedTotal.WithLabelValues(t.name).Add(float64(len(ns)))
	return ns
}

// State returns the last good snapshot and how the last refresh went. It
// never waits for a refresh in progress.
func (t *tracker) State() State {
	if st := t.state.Load(); st != nil {
		return *st
	}
	return State{}
}

// Synced returns a channel closed once the first good snapshot is taken.
func (t *tracker) Synced() <-chan struct{} { return t.syncedCh() }

func (t *tracker) syncedCh() chan struct{} {
	t.once.Do(func() { t.synced = make(chan struct{}) })
	return t.synced
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
	// Baseline, when set, returns the grants in use: what the consumer's
	// state in the cluster stands for (one Grant per volume it made from
	// this source). The first document after a start, when there is no
	// snapshot in memory to compare with, is checked against it under
	// MaxDropShare, so that a restart does not reset the drop guard. A
	// Baseline that fails refuses the document (ReasonNoBaseline). Without
	// it the first document is taken whatever it holds.
	Baseline func(ctx context.Context) ([]Grant, error)
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
