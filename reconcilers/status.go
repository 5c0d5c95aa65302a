package reconcilers

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// DefaultStatusDelay is how long a StatusWriter gathers conditions for a
// Profile before it writes them, unless every plugin that applies to the
// Profile has already reported True (then they are written at once).
const DefaultStatusDelay = 250 * time.Millisecond

// DefaultStatusWait is how long, at most, a StatusWriter holds a Profile's
// conditions back for a plugin that applies to the Profile, has not reported
// it yet and has reported no other Profile either meanwhile (see
// StatusWriter.Expect). A plugin working through a deep queue reports other
// Profiles all along, so the writer waits for it however long its queue is;
// the wait bounds only a plugin that has gone quiet: a pass that fails before
// it reports, or one slow pass (an outside call up to its timeout). Ready
// cannot be True before the last plugin reports in any case.
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
// Profiles in the queues, where a plugin with more objects a Profile drains
// its queue slower than the others, so the writer also knows which plugins
// this host runs and which apply to a Profile (Expect, which each Reconciler
// calls): while one of them has neither reported nor a condition on the
// Profile, the writer holds the Profile's conditions back, as long as that
// plugin keeps reporting other Profiles, or else for at most the wait
// (DefaultStatusWait). A new Profile thus gets one status update that
// carries every plugin's condition, written as soon as the last of them
// reported (without the delay, when all are True), whatever the depth of
// the queues. Kinds a Profile lists that no
// plugin of this host runs are not waited for, and Ready does not count
// them. A condition that is not True is written after the delay alone, so
// that a failure shows at once. A change to a Profile that already carries
// every condition is written after the delay alone.
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
	// shutdown shuts the queue down once, however often Start returns: the
	// priority queue panics on a second ShutDown.
	shutdown sync.Once

	mu      sync.Mutex
	pending map[string]map[string]*kubeflowv1.ProfileCondition
	since   map[string]time.Time // when a Profile's oldest pending condition was set
	// of is the Profile, of those that have borne the name, whose passes
	// set the pending conditions, when they were set with the Profile at
	// hand: a name deleted and registered again must not get the
	// conditions of its earlier Profile.
	of       map[string]incarnation
	expected map[string]func(*kubeflowv1.Profile) bool
	reported map[string]time.Time // when each condition type was last set, for any Profile
	// written is the resource version of the Profile after the writer's
	// last write of it, until a Profile read from the cache is at least as
	// new: one read before then comes from a cache that has not caught up,
	// its conditions wait for the delay, and the write reads the API
	// server's copy.
	written map[string]string
	// retired are the condition types of plugins the host does not run:
	// each flush takes them off the Profile.
	retired []string
}

// incarnation is one Profile of a name: its UID, and its resource version
// as the pass that set a condition read it.
type incarnation struct {
	uid types.UID
	rv  string
}

// StatusWriterOption configures a StatusWriter.
type StatusWriterOption func(*StatusWriter)

// WithRetired names the condition types of plugins the host knows and does
// not run (a host configuration that turns them off): the writer takes them
// off every Profile it writes, and a Profile that carries one counts as
// stale (ReadyStale), so that every running plugin's next pass over it
// removes them. A condition so only ever describes a plugin that serves the
// Profile.
func WithRetired(types ...string) StatusWriterOption {
	return func(w *StatusWriter) { w.retired = append(w.retired, types...) }
}

// WithStatusWait sets how long, at most, the writer holds a Profile's
// conditions back for a plugin that has not reported it yet and has reported
// no other Profile meanwhile; 0 writes after the delay alone, as if nothing
// were expected.
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
		queue:    newestFirstQueue("profilekit-status", workqueue.DefaultTypedControllerRateLimiter[string](), mgr.GetCache(), mgr.GetLogger(), func(name string) string { return name }),
		pending:  map[string]map[string]*kubeflowv1.ProfileCondition{},
		since:    map[string]time.Time{},
		of:       map[string]incarnation{},
		written:  map[string]string{},
		expected: map[string]func(*kubeflowv1.Profile) bool{},
		reported: map[string]time.Time{},
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

// Expect tells the writer that a plugin of this host reports a condition of
// type t for every Profile that applies makes true, so that it waits for it
// before it writes a Profile's first conditions, and counts it in Ready. A
// Reconciler with WithStatusWriter calls it for its plugin; the types
// expected are thus exactly the plugins the host runs.
func (w *StatusWriter) Expect(t string, applies func(*kubeflowv1.Profile) bool) {
	w.mu.Lock()
	w.expected[t] = applies
	w.mu.Unlock()
}

// Set asks for the Profile's condition of type t to become c; nil removes
// it. A later Set for the same Profile and type, before the write, wins.
func (w *StatusWriter) Set(profile, t string, c *kubeflowv1.ProfileCondition) {
	w.set(profile, nil, false, t, c)
}

// setOf is Set by a caller that has the Profile p at hand: the condition is
// of p, and is neither written on a later Profile of p's name nor kept
// once one is.
func (w *StatusWriter) setOf(p *kubeflowv1.Profile, t string, c *kubeflowv1.ProfileCondition) {
	w.set(p.Name, p, false, t, c)
}

// setFor is Set by a Reconciler, which knows the Profile p: once every
// plugin of this host that applies to p has a pending condition, all True,
// nothing more is to come for this pass and the conditions are written at
// once rather than after the delay; unless p is older than the writer's
// last write of it, read from a cache that has not caught up, whose
// conditions may only seem to change. It reports whether c is new: false
// when the same condition waits to be written already, so that a pass
// that runs again before the write records no second Event, and false for
// a pass over an earlier Profile of the name, whose condition is dropped.
func (w *StatusWriter) setFor(profile string, p *kubeflowv1.Profile, t string, c *kubeflowv1.ProfileCondition) bool {
	return w.set(profile, p, true, t, c)
}

// set is Set, setOf and setFor: p, when not nil, is the Profile the
// condition is of; gather writes at once when p's conditions are complete.
func (w *StatusWriter) set(profile string, p *kubeflowv1.Profile, gather bool, t string, c *kubeflowv1.ProfileCondition) bool {
	w.mu.Lock()
	if p != nil && !w.ofLocked(p.Name, incarnation{uid: p.UID, rv: p.ResourceVersion}) {
		w.mu.Unlock()
		return false
	}
	old, waiting := w.pending[profile][t]
	isNew := !waiting || (old == nil) != (c == nil) || (old != nil && !sameCondition(*old, *c))
	if w.pending[profile] == nil {
		w.pending[profile] = map[string]*kubeflowv1.ProfileCondition{}
		w.since[profile] = time.Now()
	}
	w.pending[profile][t] = c
	w.reported[t] = time.Now()
	behind := gather && p != nil && w.behindLocked(p)
	complete := gather && p != nil && !behind && w.completeLocked(p)
	w.mu.Unlock()
	if complete {
		w.queue.Add(profile)
		return isNew
	}
	w.queue.AddAfter(profile, w.delay)
	return isNew
}

// ofLocked ties the pending conditions of the Profile named name to the
// Profile of that name p is. The name may have been deleted and registered
// again (by another owner) while a pass over the earlier Profile was under
// way: the conditions pending for the earlier one are dropped when p is the
// later, and p's are refused (false) when p is the earlier. A Profile's
// resource version as read is older than every resource version of a
// Profile created after it was deleted. w.mu is held.
func (w *StatusWriter) ofLocked(name string, p incarnation) bool {
	if p.uid == "" {
		return true
	}
	if w.of == nil {
		w.of = map[string]incarnation{}
	}
	if held, ok := w.of[name]; ok && held.uid != p.uid {
		if cmp, err := resourceversion.CompareResourceVersion(p.rv, held.rv); err == nil && cmp < 0 {
			return false
		}
		delete(w.pending, name)
		delete(w.since, name)
	}
	w.of[name] = p
	return true
}

// completeLocked reports whether every plugin that applies to p has a
// pending True condition for p. w.mu is held.
func (w *StatusWriter) completeLocked(p *kubeflowv1.Profile) bool {
	changes := w.pending[p.Name]
	for t, applies := range w.expected {
		if !applies(p) {
			continue
		}
		if c := changes[t]; c == nil || c.Status != plugins.ConditionTrue {
			return false
		}
	}
	return true
}

// behindLocked reports whether p was read from a cache that has not yet
// seen the writer's last write of it. Once it has, the writer forgets that
// write: the cache shows nothing older from then on. w.mu is held.
func (w *StatusWriter) behindLocked(p *kubeflowv1.Profile) bool {
	rv, wrote := w.written[p.Name]
	if !wrote {
		return false
	}
	if cmp, err := resourceversion.CompareResourceVersion(p.ResourceVersion, rv); err == nil && cmp >= 0 {
		delete(w.written, p.Name)
		return false
	}
	return true
}

// forget drops what the writer remembers of a Profile that is gone.
func (w *StatusWriter) forget(profile string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, profile)
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
// plugin conditions make it: reconcilers call Touch then. A Profile that no
// plugin of this host serves should carry no Ready: it is stale only while
// it carries one.
func (w *StatusWriter) ReadyStale(p *kubeflowv1.Profile) bool {
	_, stale := w.withReady(p, p.Status.Conditions)
	return stale
}

// withReady returns conds without the retired conditions and with p's Ready
// condition as the plugins of this host that serve p make it (none when
// none serves p), and whether that changed anything.
func (w *StatusWriter) withReady(p *kubeflowv1.Profile, conds []kubeflowv1.ProfileCondition) ([]kubeflowv1.ProfileCondition, bool) {
	retired := false
	for _, t := range w.retired {
		var gone bool
		conds, gone = removeCondition(conds, t)
		retired = retired || gone
	}
	conds, changed := withReady(p.Generation, conds, w.serving(p))
	return conds, changed || retired
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
		delete(w.of, profile)
	}
	w.mu.Unlock()
}
