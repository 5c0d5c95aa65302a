package rollout

// This file holds the rollout's loop on the leader: it looks at the last
// batch, and starts the next, completes the rollout or pauses it.

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// tick is how often the leader looks at the rollout.
const tick = 250 * time.Millisecond

// member is a Profile the rollout counts: one of the shard that existed
// when the rollout began.
type member struct {
	p   *kubeflowv1.Profile
	key uint64
}

// Start writes the state the host started with and moves the rollout on
// until ctx ends. Errors are logged and tried again: a rollout that cannot
// write its state stands still, and the Profiles keep what they have.
func (r *Rollout) Start(ctx context.Context) error {
	logger := r.logger
	ctx = log.IntoContext(ctx, logger)
	st := r.State()
	logger.Info("starting", "stable", st.StableRevision, "candidate", st.CandidateRevision, "changed", r.changed,
		"batch", r.spec.Batch.String(), "minReady", r.spec.Wait().String(), "pauseOnFailure", r.spec.Pauses())
	t := time.NewTicker(tick)
	defer t.Stop()
	started := false
	for {
		if !started {
			var err error
			if started, err = r.begin(ctx); err != nil {
				return err
			}
		} else if err := r.step(ctx); err != nil {
			logger.Error(err, "rollout step")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// begin writes the starting state and, unless the rollout is paused,
// takes the RolloutPaused condition off the Profiles of an earlier pause.
// It reports whether it is done; what fails is logged and tried again. A
// replica that waited for the Lease while another moved the rollout on
// takes up its progress; if the other made a different configuration
// stable meanwhile, the reconcilers this process made no longer fit, and
// begin returns an error that ends the process, which starts again.
func (r *Rollout) begin(ctx context.Context) (bool, error) {
	logger := log.FromContext(ctx)
	kept, err := read(ctx, r.reader, r.namespace)
	if err != nil {
		logger.Error(err, "read the rollout state")
		return false, nil
	}
	st := r.State()
	fresh := Begin(kept, r.sections, st.Started)
	if fresh.StableRevision != st.StableRevision || fresh.CandidateRevision != st.CandidateRevision {
		return false, fmt.Errorf("rollout: the state changed while this replica waited to lead (stable %s, candidate %q; this process has stable %s, candidate %q): restart to serve it",
			fresh.StableRevision, fresh.CandidateRevision, st.StableRevision, st.CandidateRevision)
	}
	r.set(fresh)
	members, _, err := r.members(ctx)
	if err != nil {
		logger.Error(err, "list Profiles")
		return false, nil
	}
	if err := r.persist(ctx, fresh, members); err != nil {
		logger.Error(err, "write the rollout state")
		return false, nil
	}
	if !fresh.Active() || !fresh.Paused {
		if err := r.clearPaused(ctx); err != nil {
			logger.Error(err, "take RolloutPaused off the Profiles")
			return false, nil
		}
	}
	return true, nil
}

// step looks at the rollout once.
func (r *Rollout) step(ctx context.Context) error {
	st := r.State()
	if !st.Active() {
		return nil
	}
	members, updated, err := r.members(ctx)
	if err != nil {
		return err
	}
	report(&st, updated, len(members)-countUpdated(&st, members))
	if st.Paused {
		// A pass of the batch that fails after the pause says so too.
		_, failed := r.evaluate(&st, members)
		return r.mark(ctx, st, failed)
	}
	if st.Batches > 0 {
		ready, failed := r.evaluate(&st, members)
		if len(failed) > 0 && r.spec.Pauses() {
			return r.pause(ctx, st, members, failed, fmt.Sprintf("plugin %s failed on %d Profile(s) of batch %d with revision %s; first, Profile %s: %s",
				kindsOf(failed), profilesOf(failed), st.Batches, st.CandidateRevision, failed[0].p.Name, failed[0].message))
		}
		if !ready {
			r.setReadySince(time.Time{})
			return r.overdue(ctx, st, members)
		}
		since := r.setReadySince(time.Now())
		if time.Since(since) < r.spec.Wait() {
			return nil
		}
	}
	keys := make([]uint64, len(members))
	for i, m := range members {
		keys[i] = m.key
	}
	to, left := NextTo(keys, st.To, st.Batches > 0, BatchSize(r.spec.Batch, len(members)))
	if !left {
		done := st.Complete(r.sections)
		if err := r.persist(ctx, done, members); err != nil {
			return err
		}
		r.set(done)
		log.FromContext(ctx).Info("rollout complete", "revision", done.StableRevision, "batches", st.Batches, "profiles", len(members))
		return nil
	}
	next := st.Advance(to, time.Now())
	if err := r.persist(ctx, next, members); err != nil {
		return err
	}
	r.set(next)
	var batch []string
	for _, m := range members {
		if next.InBatch(m.key) {
			batch = append(batch, m.p.Name)
		}
	}
	log.FromContext(ctx).Info("batch started", "batch", next.Batches, "profiles", len(batch),
		"updated", countUpdated(&next, members), "of", len(members))
	return r.wake(ctx, batch)
}

// members returns the Profiles the rollout counts, and how many Profiles
// of the shard have the candidate, new ones included.
func (r *Rollout) members(ctx context.Context) ([]member, int, error) {
	var list kubeflowv1.ProfileList
	if err := r.client.List(ctx, &list); err != nil {
		return nil, 0, fmt.Errorf("list Profiles: %w", err)
	}
	st := r.State()
	var out []member
	updated := 0
	for i := range list.Items {
		p := &list.Items[i]
		if !p.DeletionTimestamp.IsZero() || !r.cfg.InShard(p.Labels) {
			continue
		}
		key := Key(p.UID)
		if st.Updated(key, p.CreationTimestamp.Time) {
			updated++
		}
		if st.Active() && !p.CreationTimestamp.Time.Before(st.Started) {
			continue
		}
		out = append(out, member{p: p, key: key})
	}
	return out, updated, nil
}

// countUpdated counts the members that have the candidate.
func countUpdated(st *State, members []member) int {
	n := 0
	for _, m := range members {
		if st.Batches > 0 && m.key <= st.To {
			n++
		}
	}
	return n
}

func (r *Rollout) set(s State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state = s
	r.readySince = time.Time{}
	clear(r.marked)
}

// setReadySince records when the batch was first seen Ready (t zero: it is
// not) and returns it.
func (r *Rollout) setReadySince(t time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.IsZero() || r.readySince.IsZero() {
		r.readySince = t
	}
	return r.readySince
}

// wake sends the batch's Profiles to every staged reconciler.
func (r *Rollout) wake(ctx context.Context, names []string) error {
	r.mu.RLock()
	wakes := slices.Clone(r.wakes)
	r.mu.RUnlock()
	for _, ch := range wakes {
		for _, n := range names {
			select {
			case ch <- event.GenericEvent{Object: &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: n}}}:
			case <-ctx.Done():
				return nil
			}
		}
	}
	return nil
}

// persist writes s into the ConfigMap.
func (r *Rollout) persist(ctx context.Context, s State, members []member) error {
	updated := countUpdated(&s, members)
	if !s.Active() {
		updated = len(members)
	}
	report(&s, updated, len(members)-updated)
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: r.namespace, Name: ConfigMapName}
	err := r.reader.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: ConfigMapName}}
		if err := s.encode(cm, s.Summary(updated, len(members)-updated)); err != nil {
			return err
		}
		if err := r.client.Create(ctx, cm); err != nil {
			return fmt.Errorf("create ConfigMap %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read ConfigMap %s: %w", key, err)
	}
	if err := s.encode(cm, s.Summary(updated, len(members)-updated)); err != nil {
		return err
	}
	if err := r.client.Update(ctx, cm); err != nil {
		return fmt.Errorf("update ConfigMap %s: %w", key, err)
	}
	return nil
}
