package reconcilers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// DefaultStatusDelay is how long a StatusWriter gathers conditions for a
// Profile before it writes them.
const DefaultStatusDelay = 250 * time.Millisecond

// DefaultStatusWait is how long, at most, a StatusWriter holds a Profile's
// conditions back while a plugin that applies to the Profile has not reported
// yet (see StatusWriter.Expect). Every pass of a plugin over a Profile it
// applies to reports, so the wait is only reached when a plugin's queue is
// deep (thousands of Profiles arriving at once, unthrottled: seconds apart
// between plugins) or one pass is slow (an outside call up to its timeout).
// It is long enough for the first, so that a new Profile still gets one
// status write, and bounds the second; Ready cannot be True before the last
// plugin reports in any case.
const DefaultStatusWait = 30 * time.Second

// StatusWriter writes the conditions of all plugins on a Profile together:
// each plugin's controller hands it its condition, and after a short delay one
// status update carries every condition that changed meanwhile. The Profile's
// condition list is atomic and every plugin writes into it, so without the
// writer a new Profile gets one status update per plugin and the conflicts
// between them; with it, usually one.
//
// The delay alone gathers only what arrives close together. Plugins' passes
// over a new Profile fall at different times, more so with thousands of
// Profiles in the queues, so the writer also knows which plugins apply to a
// Profile (Expect, which each Reconciler calls): while one of them has
// neither reported nor a condition on the Profile, the writer holds the
// Profile's conditions back, for at most the wait (DefaultStatusWait). A new
// Profile thus gets one status update that carries every plugin's condition,
// and the first condition a user sees is late by at most the wait. A change
// to a Profile that already carries every condition is written after the
// delay alone.
//
// Every write also carries the Profile-level condition Ready (see
// plugins.Ready): True when every plugin that applies to the Profile reports
// True for the Profile's generation, else False with the first failing
// plugin's reason, so that `kubectl wait --for=condition=Ready` and health
// checks have one condition to read. A Reconciler that finds Ready out of
// date with nothing else to write asks for it with Touch.
//
// Updates go through the status subresource, guarded by the resource version
// and retried on conflict; a write that fails is tried again with backoff. A
// host shares one StatusWriter between all its Reconcilers (WithStatusWriter).
type StatusWriter struct {
	client client.Client
	reader client.Reader
	delay  time.Duration
	wait   time.Duration
	queue  workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	pending  map[string]map[string]*kubeflowv1.ProfileCondition
	since    map[string]time.Time // when a Profile's oldest pending condition was set
	expected map[string]func(*kubeflowv1.Profile) bool
}

// StatusWriterOption configures a StatusWriter.
type StatusWriterOption func(*StatusWriter)

// WithStatusWait sets how long, at most, the writer holds a Profile's
// conditions back for a plugin that has not reported yet; 0 writes after the
// delay alone, as if nothing were expected.
func WithStatusWait(d time.Duration) StatusWriterOption {
	return func(w *StatusWriter) { w.wait = d }
}

// NewStatusWriter returns a StatusWriter for mgr's Profiles and adds it to mgr,
// which runs it while it leads. delay <= 0 means DefaultStatusDelay.
func NewStatusWriter(mgr ctrl.Manager, delay time.Duration, opts ...StatusWriterOption) (*StatusWriter, error) {
	if delay <= 0 {
		delay = DefaultStatusDelay
	}
	w := &StatusWriter{
		client:   WithTimeout(mgr.GetClient(), DefaultRequestTimeout),
		reader:   readerWithTimeout{mgr.GetAPIReader(), DefaultRequestTimeout},
		delay:    delay,
		wait:     DefaultStatusWait,
		queue:    workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "profilekit-status"}),
		pending:  map[string]map[string]*kubeflowv1.ProfileCondition{},
		since:    map[string]time.Time{},
		expected: map[string]func(*kubeflowv1.Profile) bool{},
	}
	for _, o := range opts {
		o(w)
	}
	if w.wait < 0 {
		return nil, fmt.Errorf("status wait must not be negative, got %s", w.wait)
	}
	if err := mgr.Add(w); err != nil {
		return nil, fmt.Errorf("add status writer: %w", err)
	}
	return w, nil
}

// Expect tells the writer that a condition of type t is coming for every
// Profile that applies makes true, so that it waits for it (within the wait)
// before it writes a Profile's first conditions. A Reconciler with
// WithStatusWriter calls it for its plugin.
func (w *StatusWriter) Expect(t string, applies func(*kubeflowv1.Profile) bool) {
	w.mu.Lock()
	w.expected[t] = applies
	w.mu.Unlock()
}

// Set asks for the Profile's condition of type t to become c; nil removes
// it. A later Set for the same Profile and type, before the write, wins.
func (w *StatusWriter) Set(profile, t string, c *kubeflowv1.ProfileCondition) {
	w.mu.Lock()
	if w.pending[profile] == nil {
		w.pending[profile] = map[string]*kubeflowv1.ProfileCondition{}
		w.since[profile] = time.Now()
	}
	w.pending[profile][t] = c
	w.mu.Unlock()
	w.queue.AddAfter(profile, w.delay)
}

// Touch asks the writer to look at the Profile's Ready condition although no
// plugin condition changed, as a Reconciler does when it finds Ready out of
// date (a host that just started serving the Profile, a plugin no longer
// applying). Nothing is written when Ready already holds.
func (w *StatusWriter) Touch(profile string) {
	w.mu.Lock()
	if w.pending[profile] == nil {
		w.pending[profile] = map[string]*kubeflowv1.ProfileCondition{}
		w.since[profile] = time.Now()
	}
	w.mu.Unlock()
	w.queue.AddAfter(profile, w.delay)
}

// ReadyStale reports whether p's Ready condition differs from what p's
// plugin conditions make it: reconcilers call Touch then.
func (w *StatusWriter) ReadyStale(p *kubeflowv1.Profile) bool {
	want := plugins.Ready(p.Generation, p.Status.Conditions, w.serving(p))
	live := plugins.FindCondition(p.Status.Conditions, plugins.ConditionReady)
	return live == nil || !plugins.SameCondition(*live, want)
}

// serving returns the condition types of the plugins that apply to p,
// sorted.
func (w *StatusWriter) serving(p *kubeflowv1.Profile) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for t, applies := range w.expected {
		if applies(p) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// Drop forgets a pending condition of type t for the Profile, for a caller
// that writes the Profile's condition itself.
func (w *StatusWriter) Drop(profile, t string) {
	w.mu.Lock()
	delete(w.pending[profile], t)
	if len(w.pending[profile]) == 0 {
		delete(w.pending, profile)
		delete(w.since, profile)
	}
	w.mu.Unlock()
}

// NeedLeaderElection makes the writer run only on the leader, like the
// controllers that feed it.
func (w *StatusWriter) NeedLeaderElection() bool { return true }

// Start writes until ctx is done.
func (w *StatusWriter) Start(ctx context.Context) error {
	const workers = 4
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for w.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
	return nil
}

func (w *StatusWriter) next(ctx context.Context) bool {
	name, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(name)
	if err := w.flush(ctx, name); err != nil {
		log.FromContext(ctx).Error(err, "write Profile conditions", "profile", name)
		w.queue.AddRateLimited(name)
		return true
	}
	w.queue.Forget(name)
	return true
}

// flush writes the pending conditions of one Profile, unless it should wait
// for a plugin that has not reported yet. On failure they go back to pending,
// under any that arrived meanwhile.
func (w *StatusWriter) flush(ctx context.Context, name string) error {
	var cached kubeflowv1.Profile
	err := w.client.Get(ctx, client.ObjectKey{Name: name}, &cached)
	if apierrors.IsNotFound(err) {
		_, _ = w.take(name)
		return nil
	}
	if err != nil {
		return err
	}
	if left := w.holdFor(&cached); left > 0 {
		w.queue.AddAfter(name, left)
		return nil
	}
	changes, ok := w.take(name)
	if !ok {
		return nil
	}
	first := true // the cached Profile first; conflicts read afresh
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &cached
		if !first {
			p = &kubeflowv1.Profile{}
			if err := w.reader.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
				return err
			}
		}
		first = false
		conds, changed := applyConditions(p.Status.Conditions, changes)
		// Ready sums up the plugins' conditions, in the same write.
		conds, readyChanged := plugins.SetCondition(conds, plugins.Ready(p.Generation, conds, w.serving(p)))
		if !changed && !readyChanged {
			return nil
		}
		p.Status.Conditions = conds
		return w.client.Status().Update(ctx, p)
	})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	w.mu.Lock()
	if w.pending[name] == nil {
		w.pending[name] = changes
		w.since[name] = time.Now()
	} else {
		for t, c := range changes {
			if _, newer := w.pending[name][t]; !newer {
				w.pending[name][t] = c
			}
		}
	}
	w.mu.Unlock()
	return err
}

// take removes and returns the pending conditions of a Profile, and whether
// it had any or was touched.
func (w *StatusWriter) take(name string) (map[string]*kubeflowv1.ProfileCondition, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	changes, ok := w.pending[name]
	delete(w.pending, name)
	delete(w.since, name)
	return changes, ok
}

// holdFor returns how much longer the pending conditions of p wait for an
// expected plugin that has not reported: 0 when none is missing, when p is
// being deleted, or when the wait is over.
func (w *StatusWriter) holdFor(p *kubeflowv1.Profile) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	changes, ok := w.pending[p.Name]
	if !ok || !p.DeletionTimestamp.IsZero() {
		return 0
	}
	left := w.wait - time.Since(w.since[p.Name])
	if left <= 0 {
		return 0
	}
	for t, applies := range w.expected {
		if _, reported := changes[t]; reported || plugins.FindCondition(p.Status.Conditions, t) != nil {
			continue
		}
		if applies(p) {
			return left
		}
	}
	return 0
}

// applyConditions sets (or, for nil, removes) each condition, in type order.
func applyConditions(conds []kubeflowv1.ProfileCondition, changes map[string]*kubeflowv1.ProfileCondition) ([]kubeflowv1.ProfileCondition, bool) {
	changed := false
	for _, t := range slices.Sorted(maps.Keys(changes)) {
		var ch bool
		if c := changes[t]; c == nil {
			conds, ch = plugins.RemoveCondition(conds, t)
		} else {
			conds, ch = plugins.SetCondition(conds, *c)
		}
		changed = changed || ch
	}
	return conds, changed
}
