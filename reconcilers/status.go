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

// StatusWriter writes the conditions of all plugins on a Profile together:
// each plugin's controller hands it its condition, and after a short delay one
// status update carries every condition that changed meanwhile. The Profile's
// condition list is atomic and every plugin writes into it, so without the
// writer a new Profile gets one status update per plugin and the conflicts
// between them; with it, usually one.
//
// Updates go through the status subresource, guarded by the resource version
// and retried on conflict; a write that fails is tried again with backoff. A
// host shares one StatusWriter between all its Reconcilers (WithStatusWriter).
type StatusWriter struct {
	client client.Client
	reader client.Reader
	delay  time.Duration
	queue  workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	pending map[string]map[string]*kubeflowv1.ProfileCondition
}

// NewStatusWriter returns a StatusWriter for mgr's Profiles and adds it to mgr,
// which runs it while it leads. delay <= 0 means DefaultStatusDelay.
func NewStatusWriter(mgr ctrl.Manager, delay time.Duration) (*StatusWriter, error) {
	if delay <= 0 {
		delay = DefaultStatusDelay
	}
	w := &StatusWriter{
		client:  WithTimeout(mgr.GetClient(), DefaultRequestTimeout),
		reader:  readerWithTimeout{mgr.GetAPIReader(), DefaultRequestTimeout},
		delay:   delay,
		queue:   workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "profilekit-status"}),
		pending: map[string]map[string]*kubeflowv1.ProfileCondition{},
	}
	if err := mgr.Add(w); err != nil {
		return nil, fmt.Errorf("add status writer: %w", err)
	}
	return w, nil
}

// Set asks for the Profile's condition of type t to become c; nil removes
// it. A later Set for the same Profile and type, before the write, wins.
func (w *StatusWriter) Set(profile, t string, c *kubeflowv1.ProfileCondition) {
	w.mu.Lock()
	if w.pending[profile] == nil {
		w.pending[profile] = map[string]*kubeflowv1.ProfileCondition{}
	}
	w.pending[profile][t] = c
	w.mu.Unlock()
	w.queue.AddAfter(profile, w.delay)
}

// Drop forgets a pending condition of type t for the Profile, for a caller
// that writes the Profile's condition itself.
func (w *StatusWriter) Drop(profile, t string) {
	w.mu.Lock()
	delete(w.pending[profile], t)
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

// flush writes the pending conditions of one Profile. On failure they go back
// to pending, under any that arrived meanwhile.
func (w *StatusWriter) flush(ctx context.Context, name string) error {
	w.mu.Lock()
	changes := w.pending[name]
	delete(w.pending, name)
	w.mu.Unlock()
	if len(changes) == 0 {
		return nil
	}
	var reader client.Reader = w.client // the cache first; conflicts read afresh
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p kubeflowv1.Profile
		if err := reader.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			return err
		}
		reader = w.reader
		conds, changed := applyConditions(p.Status.Conditions, changes)
		if !changed {
			return nil
		}
		p.Status.Conditions = conds
		return w.client.Status().Update(ctx, &p)
	})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	w.mu.Lock()
	if w.pending[name] == nil {
		w.pending[name] = changes
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
