package plugintest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// baseline is a scenario run without perturbation: after each step, the
// writes of its first pass, the state it settled in, the grants it gives
// and the user data it keeps (generic), and what a deleted Profile left.
type baseline struct {
	writes     []([]Write)
	states     []map[string]string
	grants     []map[string]bool
	data       []map[string]string
	leftBehind []string
	// removedLeft is what the plugin kept after a Remove step and should
	// have let go (see revokedLeft).
	removedLeft []string
	// reads are the kinds its passes read.
	reads []read
	// recorded says, after each step, whether the outside-state record
	// held a key.
	recorded []bool
}

// Baseline runs sc without perturbation and returns, for each step, the
// writes of its first pass and what the plugin holds once it is quiet.
func (h Harness) baseline(ctx context.Context, sc Scenario) (*baseline, error) {
	r, err := h.newRun(ctx, sc, "base")
	if err != nil {
		return nil, err
	}
	b := &baseline{}
	for i, s := range sc.Steps {
		if s.Delete && i != len(sc.Steps)-1 {
			return nil, fmt.Errorf("step %q deletes the Profile and is not the last", s.Name)
		}
		if err := r.set(ctx, s); err != nil {
			return nil, err
		}
		passes, err := r.quiet(ctx)
		if err != nil {
			return nil, fmt.Errorf("step %q without perturbation: %w", s.Name, err)
		}
		state, err := r.state(ctx)
		if err != nil {
			return nil, err
		}
		first := passes[0]
		for i := range first {
			first[i].Namespace, first[i].Name = r.generic(first[i].Namespace), r.generic(first[i].Name)
		}
		grants, err := r.grants(ctx)
		if err != nil {
			return nil, err
		}
		data := map[string]string{}
		if sc.Data != nil {
			got, err := sc.Data(ctx, r.profile.Name)
			if err != nil {
				return nil, fmt.Errorf("data: %w", err)
			}
			for name, id := range got {
				data[r.generic(name)] = id
			}
		}
		keys, err := r.recorded(ctx)
		if err != nil {
			return nil, err
		}
		b.recorded = append(b.recorded, len(keys) > 0)
		b.writes = append(b.writes, first)
		b.states = append(b.states, state)
		b.grants = append(b.grants, grants)
		b.data = append(b.data, data)
		if s.Delete {
			if b.leftBehind, err = r.leftBehind(ctx); err != nil {
				return nil, err
			}
		}
		if s.Remove {
			left, err := r.revokedLeft(ctx)
			if err != nil {
				return nil, err
			}
			b.removedLeft = append(b.removedLeft, left...)
		}
	}
	b.reads = r.reads.all()
	return b, nil
}

// PlanEnv, set in the environment, runs only the plans whose description
// holds its value, such as "rbac crash step 2 (change its role) write 1",
// as a failing plan prints it.
const PlanEnv = "PLUGINTEST_PLAN"

// Plans counts the plans of one pattern: those run, those of them that
// failed, and those left out (by -short, or by PlanEnv).
type Plans struct{ Run, Failed, Skipped int }

// CrashAfterEveryWrite runs, for every step of sc and every write k of
// that step's first pass, a plan in which the host stops right after k
// writes (the rest are never sent), then starts again with nothing of the
// last process (a fresh Applier, record cache and reads from the API
// server) and runs the step to quiet. What the plugin holds must then be
// what the run without perturbation holds, and no write of the plan may
// touch an object that neither the step before nor the step after holds.
func (h Harness) CrashAfterEveryWrite(t T, sc Scenario) Plans {
	t.Helper()
	return h.each(t, sc, "crash", anyWrite, func(ctx context.Context, r *run, k int, rec *recorder) error {
		_ = r.pass(ctx, h.Client, rec, perturbation{allow: k}) // the process stops: its error goes with it
		return nil
	})
}

// StaleAtEveryWrite runs, for every step and every write k of its first
// pass, a plan in which the pass runs whole, and the next pass (a second
// replica taking over, say) reads from a cache that holds nothing written
// from write k on: the objects as they were right before it, the
// outside-state records included. Then the step is run to quiet, and the
// same invariants hold as for CrashAfterEveryWrite.
func (h Harness) StaleAtEveryWrite(t T, sc Scenario) Plans {
	t.Helper()
	return h.each(t, sc, "stale", anyWrite, func(ctx context.Context, r *run, k int, rec *recorder) error {
		snap, err := r.viewAt(ctx, rec, k)
		if err != nil {
			return err
		}
		stale := fake.NewClientBuilder().WithScheme(ownScheme(h.Client.Scheme())).WithObjects(snap...).Build()
		_ = r.pass(ctx, stale, rec, whole) // decided from the stale view; its error is retried
		return nil
	})
}

// viewAt runs a whole pass and returns what a cache held right before its
// write k: all of it when the pass failed before (its error, a conflict
// with another writer say, is retried by a host as any other).
func (r *run) viewAt(ctx context.Context, rec *recorder, k int) ([]client.Object, error) {
	var snap []client.Object
	var snapErr error
	taken := false
	_ = r.pass(ctx, r.h.Client, rec, perturbation{allow: -1, before: func(i int) {
		if i == k {
			snap, snapErr = r.snapshot(ctx)
			taken = true
		}
	}})
	if !taken {
		return r.snapshot(ctx)
	}
	return snap, snapErr
}

// anyWrite takes every write and outside call.
func anyWrite(Write) bool { return true }

// outsideCall takes the outside calls alone.
func outsideCall(w Write) bool { return w.Verb == "call" }

// each runs one plan per step and write of the baseline that at takes.
func (h Harness) each(t T, sc Scenario, pattern string, at func(Write) bool, perturb perturber) Plans {
	t.Helper()
	base, plans := h.begin(t, sc, pattern)
	h.eachWrite(t, sc, base, &plans, pattern, at, perturb)
	return plans
}

// perturber perturbs the pass of a plan at write k, recording in rec.
type perturber func(ctx context.Context, r *run, k int, rec *recorder) error

// begin runs sc's baseline and reports what a deleted Profile left.
func (h Harness) begin(t T, sc Scenario, pattern string) (*baseline, Plans) {
	t.Helper()
	base, err := h.baseline(quietLogs(t.Context()), sc)
	if err != nil {
		t.Fatalf("%s: %v", sc.Def.Kind(), err)
	}
	var plans Plans
	if len(base.leftBehind) > 0 {
		fail(t, sc.Def.Kind()+" "+pattern+" baseline", "left behind: the deleted Profile's plugin leaves what nothing takes:\n\t%s", strings.Join(base.leftBehind, "\n\t"))
		plans.Failed++
	}
	if len(base.removedLeft) > 0 {
		fail(t, sc.Def.Kind()+" "+pattern+" baseline", "left behind: the removed plugin keeps what it should have let go:\n\t%s", strings.Join(base.removedLeft, "\n\t"))
		plans.Failed++
	}
	return base, plans
}

// try runs the plan described by plan, unless PlanEnv picks others, and
// counts it.
func (p *Plans) try(plan string, run func() bool) {
	if only := os.Getenv(PlanEnv); only != "" && !strings.Contains(plan, only) {
		p.Skipped++
		return
	}
	p.Run++
	if !run() {
		p.Failed++
	}
}

// try runs a plan as Plans.try does, unless the harness is told to stop
// (a mutant's plans, once one failed).
func (h Harness) try(p *Plans, plan string, run func() bool) {
	if h.stop != nil && h.stop() || h.only != "" && planKey(plan) != planKey(h.only) {
		p.Skipped++
		return
	}
	p.try(plan, run)
}

// eachWrite runs one plan per step and write of base that at takes.
func (h Harness) eachWrite(t T, sc Scenario, base *baseline, plans *Plans, pattern string, at func(Write) bool, perturb perturber) {
	t.Helper()
	for s, step := range sc.Steps {
		var ks []int
		for k, w := range base.writes[s] {
			if at(w) {
				ks = append(ks, k)
			}
		}
		for i, k := range ks {
			if short(i, len(ks)) {
				plans.Skipped++
				continue // the first and the last of each step
			}
			plan := fmt.Sprintf("%s %s step %d (%s) write %d of %d: %s", sc.Def.Kind(), pattern, s, step.Name, k, len(base.writes[s]), base.writes[s][k])
			h.try(plans, plan, func() bool { return h.plan(t, sc, base, point{s: s, from: s - 1, k: k, plan: plan}, perturb) })
		}
	}
}

// short reports whether -short leaves out the i-th of n plans of a step:
// it runs the first and the last.
func short(i, n int) bool { return testing.Short() && i > 0 && i < n-1 }

// point is where a plan perturbs: step s, after the steps up to from ran
// to quiet (from is s-1, or less when the steps between were never seen),
// at write k of the step's first pass.
type point struct {
	s, from, k int
	plan       string
	// then, when set, is where the Profile goes after the perturbation
	// and before the host starts again (see CrashThenMoveOn).
	then *moveOn
}

// plan runs one plan and checks its invariants; it reports whether they
// held.
func (h Harness) plan(t T, sc Scenario, base *baseline, at point, perturb perturber) bool {
	t.Helper()
	ctx := quietLogs(t.Context())
	plan, s := at.plan, at.s
	r, err := h.newRun(ctx, sc, "plan")
	if err != nil {
		t.Fatal(err)
	}
	r.views = base.reads
	for i := range s {
		if err := r.set(ctx, sc.Steps[i]); err != nil {
			t.Fatal(err)
		}
		if i > at.from {
			continue // changed before the host saw it
		}
		if _, err := r.quiet(ctx); err != nil {
			fail(t, plan, "step %d before the perturbation: %v", i, err)
			return false
		}
	}
	if err := r.set(ctx, sc.Steps[s]); err != nil {
		t.Fatal(err)
	}
	if r.watch, err = r.newWatch(ctx, base, at.from, s); err != nil {
		t.Fatal(err)
	}
	held, err := r.state(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	if err := perturb(ctx, r, at.k, rec); err != nil {
		fail(t, plan, "%v", err)
		return false
	}
	if at.then != nil {
		if err := r.set(ctx, at.then.step(sc)); err != nil {
			t.Fatal(err)
		}
		r.watch.moveOn(ctx, base, at.then.next)
	}
	passes, err := r.quiet(ctx)
	if err != nil {
		fail(t, plan, "after the perturbation: %v", err)
		return false
	}
	ok := true
	for _, f := range r.watch.findings {
		fail(t, plan, "safety: %s", f)
		ok = false
	}
	end := s
	if at.then != nil {
		if at.then.next < 0 {
			return r.deleted(ctx, t, plan) && ok
		}
		end = at.then.next
	}
	state, err := r.state(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := base.states[end]
	if at.from < s-1 {
		// A step never seen made nothing, so what the run that saw it
		// keeps from it (retained data, a namespace left in place) may
		// be missing; nothing else may.
		want = maps.Clone(want)
		maps.DeleteFunc(want, func(k, _ string) bool { _, held := state[k]; return !held })
	}
	if at.then != nil {
		want = r.unfinished(sc, base, at, want, state)
	}
	if diff := cmp.Diff(want, state); diff != "" {
		fail(t, plan, "liveness: what the plugin holds differs from the run without perturbation (-want +got):\n%s\twrites of the perturbed passes: %v\n\tthen, to quiet: %v", diff, rec.writes, passes)
		ok = false
	}
	// Safety: every write names an object the plugin held when the step
	// began, or that the step before or the step after holds; nothing
	// else is touched.
	allowed := names(held, base.states[s], base.states[end])
	if at.from >= 0 {
		allowed = names(held, base.states[at.from], base.states[s], base.states[end])
	}
	for _, k := range sc.Touches {
		allowed[k] = true
	}
	all := rec.writes
	for _, p := range passes {
		all = append(all, p...)
	}
	for _, w := range all {
		if w.Verb == "deletecollection" || w.Verb == "call" || w.Kind == "ConfigMap" && w.Namespace == h.recordsNamespace() {
			continue // by label, ours alone; an outside call (Observe holds its result); the outside-state record
		}
		key := w.Kind + " " + r.generic(w.Namespace+"/"+w.Name)
		if !allowed[key] {
			fail(t, plan, "safety: %s touched %s, which neither the step before nor this one holds", w.Verb, key)
			ok = false
		}
	}
	return ok
}

// quietLogs is ctx with a logger that drops everything: a plan's passes
// fail on purpose, and what they log says nothing.
func quietLogs(ctx context.Context) context.Context {
	return log.IntoContext(ctx, logr.Discard())
}
