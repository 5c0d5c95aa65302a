package plugintest

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// UnobservedAtEveryWrite runs, for every step and every write k to the API
// server of its first pass, a plan in which the pass runs whole and the
// event of write k never reaches the host's cache: the next pass (woken by
// a resync or by another event) sees that object as it was before write k,
// or not at all if k made it, and every other write as it is, as when a
// watch drops one event and nothing lists again. A later write of the same
// object in the pass brings its event, and the view whole.
//
// Then, for every step after the first, a plan in which the host never
// sees the step before it: the two changes of the Profile come as one
// event, and the host goes from the step before those two straight to
// this one. The plugin may then lack what the run that saw the step keeps
// from it (retained data), and hold nothing more nor different.
//
// After each, the step is run to quiet reading from the API server, and
// the invariants of CrashAfterEveryWrite hold.
func (h Harness) UnobservedAtEveryWrite(t T, sc Scenario) Plans {
	t.Helper()
	const pattern = "unobserved"
	base, plans := h.begin(t, sc, pattern)
	h.eachWrite(t, sc, base, &plans, pattern, apiWrite, func(ctx context.Context, r *run, k int, rec *recorder) error {
		before, err := r.viewAt(ctx, rec, k)
		if err != nil {
			return err
		}
		after, err := r.snapshot(ctx)
		if err != nil {
			return err
		}
		view := withoutEvent(after, before, rec.writes, k)
		blind := fake.NewClientBuilder().WithScheme(ownScheme(h.Client.Scheme())).WithObjects(view...).Build()
		_ = r.pass(ctx, blind, rec, whole) // decided from a view that missed one event; its error is retried
		return nil
	})
	for s := 1; s < len(sc.Steps); s++ {
		plan := fmt.Sprintf("%s %s step %d (%s) seen only with step %d (%s)", sc.Def.Kind(), pattern, s-1, sc.Steps[s-1].Name, s, sc.Steps[s].Name)
		h.try(&plans, plan, func() bool {
			return h.plan(t, sc, base, point{s: s, from: s - 2, plan: plan}, func(context.Context, *run, int, *recorder) error { return nil })
		})
	}
	return plans
}

// apiWrite takes the writes to the API server that name one object: those
// whose event a watch delivers.
func apiWrite(w Write) bool { return w.Verb != "call" && w.Verb != "deletecollection" }

// withoutEvent is the view of a cache that missed the event of write k:
// the objects after the pass, with write k's object as it was before it,
// unless a later write of the pass brought it again.
func withoutEvent(after, before []client.Object, writes []Write, k int) []client.Object {
	if k >= len(writes) {
		return after // the pass ended before write k (it failed, to be retried): no event to lose
	}
	lost := writes[k]
	for _, w := range writes[k+1:] {
		if w.Kind == lost.Kind && w.Namespace == lost.Namespace && w.Name == lost.Name {
			return after
		}
	}
	is := func(o client.Object) bool {
		return o.GetObjectKind().GroupVersionKind().Kind == lost.Kind && o.GetNamespace() == lost.Namespace && o.GetName() == lost.Name
	}
	var view []client.Object
	for _, o := range after {
		if !is(o) {
			view = append(view, o)
		}
	}
	for _, o := range before {
		if is(o) {
			view = append(view, o)
		}
	}
	return view
}
