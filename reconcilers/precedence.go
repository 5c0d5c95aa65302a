package reconcilers

// This file holds the precedence between a host's passes: those with work
// to do go first, those that only confirm what is already true wait.

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// DefaultPrecedenceWait is how long, by default, a pass that only confirms
// waits at most for the passes with work to do (see Precedence).
const DefaultPrecedenceWait = time.Second

// Precedence orders the passes of a host's Reconcilers by what they are
// likely to do, and is shared between them (WithPrecedence).
//
// A pass is urgent when it has work to do or a user waits for it: its
// Profile is being deleted, the plugin's condition on it is missing, not
// True or of an older generation (a Profile just created or changed, a
// failure being retried), a plugin is to be revoked, or most of its
// plugin's recent passes wrote something (a host-wide change rolling out
// after a restart). Any other pass is expected to confirm that everything
// is in sync: the resync, the restart's pass over every Profile, events of
// objects that did not change. A pass of a plugin that does not apply to
// the Profile and left nothing on it does nothing at all, and goes at once.
//
// A pass that only confirms waits, before it starts, while any urgent pass
// is under way, at most the wait given to NewPrecedence. The host and the
// API server share the machine: a restart's tens of thousands of
// confirmations would otherwise take its cores from the writes of a change
// that rolls out and from the first pass of a Profile a user just created.
// The bound keeps confirmations going under an endless stream of urgent
// work (a failing outside system retried), one pass per worker and wait.
//
// Waiting holds no place in flight (LimitInFlight), no lock and no outside
// call, but it holds a worker of its plugin: so each event that comes into
// the plugin's queue while passes wait ends one wait (freshWork), and that
// pass gives its worker to the newest work and comes back, without running,
// when no urgent pass is under way any more, at the latest for the rest of
// its wait, counted from its first. Without that, a Profile
// created while every worker waited would wait the whole bound for each
// plugin in turn. A pass whose guess was wrong loses at most the wait.
type Precedence struct {
	wait time.Duration

	mu     sync.Mutex
	urgent int
	// clear is closed when urgent falls to zero; nil while it is zero.
	clear chan struct{}
}

// NewPrecedence returns a Precedence under which a pass that only confirms
// waits at most wait; wait <= 0 lets every pass go at once.
func NewPrecedence(wait time.Duration) *Precedence {
	return &Precedence{wait: wait}
}

// begin counts an urgent pass under way until the returned end is called.
func (p *Precedence) begin() (end func()) {
	p.mu.Lock()
	p.urgent++
	if p.clear == nil {
		p.clear = make(chan struct{})
	}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.urgent--
		if p.urgent == 0 {
			close(p.clear)
			p.clear = nil
		}
		p.mu.Unlock()
	}
}

// yield waits, for a pass that only confirms, until no urgent pass is under
// way, limit (at most the wait) is over, fresh delivers or ctx ends. It
// reports how long it waited, and woken when fresh ended the wait: new work
// wants the pass's worker.
func (p *Precedence) yield(ctx context.Context, fresh <-chan struct{}, limit time.Duration) (waited time.Duration, woken bool) {
	limit = min(limit, p.wait)
	if limit <= 0 {
		return 0, false
	}
	p.mu.Lock()
	cleared := p.clear
	p.mu.Unlock()
	if cleared == nil {
		return 0, false
	}
	start := time.Now()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-cleared:
	case <-t.C:
	case <-fresh:
		woken = true
	case <-ctx.Done():
	}
	return time.Since(start), woken
}

// clearing returns a channel closed when no urgent pass is under way any
// more, or nil when none is now.
func (p *Precedence) clearing() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clear
}

// deferrals are the confirmations of one Reconciler that gave their worker
// to new work while they waited, and since when each has waited, so that
// the bound counts from the first wait however often new work comes.
type deferrals struct {
	mu    sync.Mutex
	first map[string]time.Time
	// kept tells deferredSource that a confirmation was kept.
	kept chan struct{}
}

// since returns when the Profile's confirmation began to wait, or now.
func (d *deferrals) since(profile string) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.first[profile]; ok {
		return t
	}
	return time.Now()
}

// keep records that the Profile's confirmation, waiting since t, comes back.
func (d *deferrals) keep(profile string, t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.first == nil {
		d.first = map[string]time.Time{}
	}
	d.first[profile] = t
	select {
	case d.kept <- struct{}{}:
	default:
	}
}

// profiles returns the Profiles whose confirmations were kept.
func (d *deferrals) profiles() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	names := make([]string, 0, len(d.first))
	for name := range d.first {
		names = append(names, name)
	}
	return names
}

// end forgets the Profile's confirmation: it runs, or the pass is urgent.
func (d *deferrals) end(profile string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.first, profile)
}

// deferredSource brings a confirmation that gave its worker up back as
// soon as no urgent pass is under way: its requeue after the rest of its
// wait is only the bound. Without it, a confirmation woken by new work
// would wait its whole bound even when the urgent pass ended at once.
func (r *Reconciler) deferredSource() source.TypedSource[reconcile.Request] {
	return source.TypedFunc[reconcile.Request](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go r.runDeferred(ctx, q)
		return nil
	})
}

// runDeferred runs deferredSource until ctx ends.
func (r *Reconciler) runDeferred(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.deferrals.kept:
		}
		if cleared := r.precedence.clearing(); cleared != nil {
			select {
			case <-ctx.Done():
				return
			case <-cleared:
			}
		}
		for _, name := range r.deferrals.profiles() {
			enqueueLow(q, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		}
	}
}

// freshWork ends one wait of a pass of r that only confirms, if one is
// waiting: work came into r's queue that a worker should take now.
func (r *Reconciler) freshWork() {
	select {
	case r.fresh <- struct{}{}:
	default:
	}
}

// recentWrites is a Reconciler's record of whether its last 32 apply passes
// wrote: one bit a pass, the newest lowest.
type recentWrites struct{ bits atomic.Uint32 }

// record adds one pass.
func (w *recentWrites) record(wrote bool) {
	var bit uint32
	if wrote {
		bit = 1
	}
	for {
		old := w.bits.Load()
		if w.bits.CompareAndSwap(old, old<<1|bit) {
			return
		}
	}
}

// writing reports whether a quarter or more of the last 32 passes wrote.
func (w *recentWrites) writing() bool {
	return bits.OnesCount32(w.bits.Load()) >= 8
}

// urgent reports whether the plugin's pass over p has work to do or a user
// waiting for it (see Precedence).
func (r *Reconciler) urgent(p *kubeflowv1.Profile) bool {
	if !p.DeletionTimestamp.IsZero() {
		return true
	}
	if !r.Applies(p) {
		return r.leftOn(p)
	}
	cond := plugins.FindCondition(p.Status.Conditions, r.def.Condition())
	if cond == nil || cond.Status != plugins.ConditionTrue || cond.ObservedGeneration != p.Generation {
		return true
	}
	return r.recent.writing()
}

var passWaitSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "profilekit_plugin_pass_precedence_wait_seconds",
	Help:    "How long passes expected only to confirm waited for urgent passes before they started, by plugin kind.",
	Buckets: prometheus.ExponentialBuckets(0.001, 4, 7),
}, []string{"plugin"})

func init() { metrics.Registry.MustRegister(passWaitSeconds) }

// takeTurn orders the pass among the passes of every Reconciler sharing
// r.precedence: an urgent pass goes at once and holds its place until end
// is called; a confirming pass first yields to urgent ones (see
// Precedence). When end is nil, the pass does not run now: it returns
// later and err (a pass woken to give its worker up comes back for the
// rest of its wait; a Profile gone while it waited is done). p is read
// again when the pass waited, since it may have changed meanwhile.
func (r *Reconciler) takeTurn(ctx context.Context, req reconcile.Request, p *kubeflowv1.Profile) (end func(), later reconcile.Result, err error) {
	if r.urgent(p) {
		r.deferrals.end(req.Name)
		return r.precedence.begin(), reconcile.Result{}, nil
	}
	if !r.Applies(p) {
		// Nothing to take back (else it is urgent): the pass does nothing,
		// which costs less than waiting and coming back.
		r.deferrals.end(req.Name)
		return func() {}, reconcile.Result{}, nil
	}
	since := r.deferrals.since(req.Name)
	waited, woken := r.precedence.yield(ctx, r.fresh, r.precedence.wait-time.Since(since))
	if waited > 0 {
		passWaitSeconds.WithLabelValues(r.def.Kind()).Observe(waited.Seconds())
	}
	if woken {
		// New work wants this worker: the pass gives it up and comes back
		// for the rest of its wait.
		r.deferrals.keep(req.Name, since)
		return nil, reconcile.Result{RequeueAfter: max(r.precedence.wait-time.Since(since), time.Millisecond)}, nil
	}
	r.deferrals.end(req.Name)
	if waited > 0 {
		if err := r.client.Get(ctx, req.NamespacedName, p, client.UnsafeDisableDeepCopy); err != nil {
			return nil, reconcile.Result{}, r.gone(req.Name, err)
		}
	}
	return func() {}, reconcile.Result{}, nil
}
