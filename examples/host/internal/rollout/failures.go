package rollout

// This file holds how the leader judges a batch: the Profiles that failed
// with the candidate or were not Ready by the progress deadline, and the
// pause that follows.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// failure is a Profile of the batch that a changed plugin failed with the
// candidate.
type failure struct {
	p       *kubeflowv1.Profile
	kind    string
	message string
	// late says the Profile did not fail but was not Ready by the progress
	// deadline.
	late bool
}

// evaluate reports whether every Profile of the last batch is Ready with
// the candidate (a failed one counts as done when the rollout does not
// pause on failures), and the failures.
func (r *Rollout) evaluate(st *State, members []member) (bool, []failure) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ready := true
	var failed []failure
	for _, m := range members {
		if !st.InBatch(m.key) {
			continue
		}
		for _, kind := range r.changed {
			ok, fail := r.readyFor(m.p, kind)
			if fail != "" {
				failed = append(failed, failure{p: m.p, kind: kind, message: fail})
				ok = !r.spec.Pauses()
			}
			ready = ready && ok
		}
	}
	return ready, failed
}

// readyFor reports whether the candidate's pass of kind over p is done:
// the plugin's condition True (or gone, where the candidate does not run
// the plugin for p) in the Profile and in the pass that set it; or why it
// failed.
func (r *Rollout) readyFor(p *kubeflowv1.Profile, kind string) (bool, string) {
	o, seen := r.observed[p.UID][kind]
	if seen && o.candidate && o.status == plugins.ConditionFalse {
		return false, o.message
	}
	cond := plugins.FindCondition(p.Status.Conditions, r.conditions[kind])
	sec, ok := r.sections[kind]
	if !ok || !sec.Applies(plugins.Listed(p, kind), p.Labels) {
		return cond == nil, ""
	}
	return seen && o.candidate && o.status == plugins.ConditionTrue && cond != nil && cond.Status == plugins.ConditionTrue, ""
}

// overdue pauses the rollout when the last batch has not been Ready for
// the progress deadline since it started: the Profiles of the batch that
// are not Ready with the candidate get the RolloutPaused condition. A
// batch started by an earlier version, whose start is not known, is timed
// from now.
func (r *Rollout) overdue(ctx context.Context, st State, members []member) error {
	deadline := r.spec.Deadline()
	if deadline <= 0 {
		return nil
	}
	if st.BatchStarted.IsZero() {
		st.BatchStarted = time.Now()
		if err := r.persist(ctx, st, members); err != nil {
			return err
		}
		r.set(st)
		return nil
	}
	if time.Since(st.BatchStarted) < deadline {
		return nil
	}
	late := r.late(&st, members, deadline)
	if len(late) == 0 {
		return nil
	}
	return r.pause(ctx, st, members, late, fmt.Sprintf("batch %d was not Ready with revision %s within the progress deadline %s: %d Profile(s) not Ready; first, Profile %s, plugin %s: %s",
		st.Batches, st.CandidateRevision, deadline, profilesOf(late), late[0].p.Name, late[0].kind, late[0].message))
}

// late returns the Profiles of the last batch whose changed plugins are
// not Ready with the candidate, each with what its condition says.
func (r *Rollout) late(st *State, members []member, deadline time.Duration) []failure {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []failure
	for _, m := range members {
		if !st.InBatch(m.key) {
			continue
		}
		for _, kind := range r.changed {
			if ok, _ := r.readyFor(m.p, kind); ok {
				continue
			}
			why := "no condition yet"
			if c := plugins.FindCondition(m.p.Status.Conditions, r.conditions[kind]); c != nil {
				why = fmt.Sprintf("%s %s", c.Status, c.Message)
			}
			out = append(out, failure{p: m.p, kind: kind, late: true,
				message: fmt.Sprintf("not Ready within the progress deadline %s (%s)", deadline, why)})
		}
	}
	return out
}

// kindsOf names the plugins of failures, sorted.
func kindsOf(failed []failure) string {
	kinds := map[string]bool{}
	for _, f := range failed {
		kinds[f.kind] = true
	}
	return strings.Join(slices.Sorted(maps.Keys(kinds)), ", ")
}

// profilesOf counts the Profiles of failures.
func profilesOf(failed []failure) int {
	profiles := map[string]bool{}
	for _, f := range failed {
		profiles[f.p.Name] = true
	}
	return len(profiles)
}

// pause stops the rollout for reason: the state says why, and so do the
// failed Profiles' RolloutPaused condition and Events.
func (r *Rollout) pause(ctx context.Context, st State, members []member, failed []failure, reason string) error {
	paused := st.Pause(reason)
	if err := r.persist(ctx, paused, members); err != nil {
		return err
	}
	r.set(paused)
	log.FromContext(ctx).Info("rollout paused", "batch", st.Batches, "reason", reason)
	return r.mark(ctx, paused, failed)
}

// mark gives each failed Profile of a paused batch the RolloutPaused
// condition and a Warning Event, once: those that failed before the pause
// and those whose pass failed after it.
func (r *Rollout) mark(ctx context.Context, st State, failed []failure) error {
	for _, f := range failed {
		if r.isMarked(f.p, st.CandidateRevision) {
			continue
		}
		what := "failed"
		if f.late {
			what = "was not Ready"
		}
		msg := plugins.ConditionMessage(ReasonRolloutPaused, plugins.BoundMessage(fmt.Sprintf("plugin %s %s with revision %s in batch %d; the rollout stands still until the configuration changes: %s",
			f.kind, what, st.CandidateRevision, st.Batches, f.message)))
		if err := r.setPaused(ctx, f.p.Name, &kubeflowv1.ProfileCondition{Type: ConditionRolloutPaused, Status: plugins.ConditionTrue, Message: msg}); err != nil {
			return err
		}
		r.recorder.Eventf(f.p, nil, corev1.EventTypeWarning, ReasonRolloutPaused, "Rollout", "plugin %s %s with revision %s in batch %d: %s",
			f.kind, what, st.CandidateRevision, st.Batches, plugins.BoundMessage(f.message))
		r.mu.Lock()
		r.marked[f.p.UID] = true
		r.mu.Unlock()
	}
	return nil
}

// isMarked reports whether p has this pause's RolloutPaused condition:
// marked by this process since the state changed, or by an earlier one
// (the condition names the revision).
func (r *Rollout) isMarked(p *kubeflowv1.Profile, revision string) bool {
	r.mu.RLock()
	done := r.marked[p.UID]
	r.mu.RUnlock()
	if done {
		return true
	}
	c := plugins.FindCondition(p.Status.Conditions, ConditionRolloutPaused)
	return c != nil && c.Status == plugins.ConditionTrue && strings.Contains(c.Message, revision)
}
