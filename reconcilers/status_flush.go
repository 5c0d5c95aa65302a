package reconcilers

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

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
	w.shutdown.Do(w.queue.ShutDown)
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
	if err == nil {
		w.mu.Lock()
		behind := w.behindLocked(&cached)
		w.mu.Unlock()
		if behind {
			// A write from a cache that has not seen the last one would
			// only be refused; the API server's copy costs a read instead.
			err = w.reader.Get(ctx, client.ObjectKey{Name: name}, &cached)
		}
	}
	if apierrors.IsNotFound(err) {
		_, _, _ = w.take(name)
		w.mu.Lock()
		delete(w.written, name)
		w.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	if left := w.holdFor(&cached); left > 0 {
		w.queue.AddAfter(name, left)
		return nil
	}
	changes, of, ok := w.take(name)
	if !ok {
		return nil
	}
	if of.uid != "" && cached.UID != of.uid {
		// The cache may not show the Profile the conditions are of yet;
		// when the API server does not either, they are of a Profile of
		// the name that is gone, and describe nothing that is.
		err := w.reader.Get(ctx, client.ObjectKey{Name: name}, &cached)
		if apierrors.IsNotFound(err) || err == nil && cached.UID != of.uid {
			return nil
		}
		if err != nil {
			w.putBack(name, changes, of)
			return err
		}
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
		if of.uid != "" && p.UID != of.uid {
			return nil
		}
		conds, changed := applyConditions(p.Status.Conditions, changes)
		// Ready sums up the plugins' conditions, in the same write; a
		// Profile that no plugin of this host serves gets none.
		conds, readyChanged := w.withReady(p, conds)
		if !changed && !readyChanged {
			return nil
		}
		p.Status.Conditions = conds
		if err := w.client.Status().Update(ctx, p); err != nil {
			return err
		}
		w.mu.Lock()
		w.written[name] = p.ResourceVersion
		w.mu.Unlock()
		return nil
	})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	w.putBack(name, changes, of)
	return err
}

// putBack returns the conditions of a failed write to pending, under any
// that arrived meanwhile; of two Profiles of the name, the later's
// conditions win whole.
func (w *StatusWriter) putBack(name string, changes map[string]*kubeflowv1.ProfileCondition, of incarnation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ofLocked(name, of) {
		return
	}
	if w.pending[name] == nil {
		w.pending[name] = changes
		w.since[name] = time.Now()
		return
	}
	for t, c := range changes {
		if _, newer := w.pending[name][t]; !newer {
			w.pending[name][t] = c
		}
	}
}

// take removes and returns the pending conditions of a Profile, the
// Profile they are of when known, and whether it had any or was touched.
func (w *StatusWriter) take(name string) (map[string]*kubeflowv1.ProfileCondition, incarnation, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	changes, ok := w.pending[name]
	of := w.of[name]
	delete(w.pending, name)
	delete(w.since, name)
	delete(w.of, name)
	return changes, of, ok
}

// holdFor returns how much longer the pending conditions of p wait for a
// plugin of this host that applies to p and has not reported it: 0 when none
// is missing, when p is being deleted, when a pending condition is not True,
// or when the missing plugins have been quiet for the wait. A missing plugin
// that reported another Profile within the wait is working through its
// queue and will come to p: the writer waits for it, so that p gets one
// write however deep the queue.
func (w *StatusWriter) holdFor(p *kubeflowv1.Profile) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	changes, ok := w.pending[p.Name]
	if !ok || !p.DeletionTimestamp.IsZero() || w.wait == 0 {
		return 0
	}
	for _, c := range changes {
		if c != nil && c.Status != plugins.ConditionTrue {
			return 0
		}
	}
	now := time.Now()
	hold := time.Duration(0)
	for t, applies := range w.expected {
		if _, reported := changes[t]; reported || plugins.FindCondition(p.Status.Conditions, t) != nil {
			continue
		}
		if !applies(p) {
			continue
		}
		hold = max(hold, w.wait-now.Sub(w.since[p.Name]), w.wait-now.Sub(w.reported[t]))
	}
	return hold
}

// applyConditions sets (or, for nil, removes) each condition, in type order.
func applyConditions(conds []kubeflowv1.ProfileCondition, changes map[string]*kubeflowv1.ProfileCondition) ([]kubeflowv1.ProfileCondition, bool) {
	changed := false
	for _, t := range slices.Sorted(maps.Keys(changes)) {
		var ch bool
		if c := changes[t]; c == nil {
			conds, ch = removeCondition(conds, t)
		} else {
			conds, ch = setCondition(conds, *c)
		}
		changed = changed || ch
	}
	return conds, changed
}
