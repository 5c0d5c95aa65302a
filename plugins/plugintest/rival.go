package plugintest

// This file holds the plans in which a second Profile asks for what the
// first holds in a shared space: the claim that keeps a cloud identity to
// one Profile must refuse it.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
)

// Rivals runs, for every step of sc after which the Profile holds a grant
// (the first and the last of them under -short), a plan in which the step
// is quiet and then a second Profile, the rival, asks for what the
// Profile asked for at that step: the step's spec, with {{ .Profile }}
// standing for the first Profile's name, under the host defaults
// [Scenario.RivalDefaults] returns, which allow it to ask. The rival's
// passes must come to a terminal Conflict; the Profile's grants must be
// what they were (the rival got no grant on the Profile's identities and
// took none away); and the Profile, run again, holds what the run without
// perturbation holds. A scenario without RivalDefaults has no rival plans.
func (h Harness) Rivals(t T, sc Scenario) Plans {
	t.Helper()
	const pattern = "rival"
	if sc.RivalDefaults == nil {
		return Plans{}
	}
	base, plans := h.begin(t, sc, pattern)
	var steps []int
	for s, step := range sc.Steps {
		if !step.Remove && !step.Delete && len(base.grants[s]) > 0 {
			steps = append(steps, s)
		}
	}
	for i, s := range steps {
		if short(i, len(steps)) {
			plans.Skipped++
			continue
		}
		plan := fmt.Sprintf("%s %s step %d (%s): a second Profile asks for what this one holds", sc.Def.Kind(), pattern, s, sc.Steps[s].Name)
		h.try(&plans, plan, func() bool { return h.rival(t, sc, base, s, plan) })
	}
	return plans
}

// rival runs one plan of Rivals, at step s, and reports whether its
// invariants held.
func (h Harness) rival(t T, sc Scenario, base *baseline, s int, plan string) bool {
	t.Helper()
	ctx := quietLogs(t.Context())
	r, err := h.newRun(ctx, sc, "plan")
	if err != nil {
		t.Fatal(err)
	}
	for i := range s + 1 {
		if err := r.set(ctx, sc.Steps[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := r.quiet(ctx); err != nil {
			fail(t, plan, "step %d before the rival: %v", i, err)
			return false
		}
	}
	before, err := r.grants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(sc.Steps[s].Spec)
	if err != nil {
		t.Fatal(err)
	}
	var spec any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), "{{ .Profile }}", r.profile.Name)), &spec); err != nil {
		t.Fatal(err)
	}
	rv, err := h.newRun(ctx, sc, "rival")
	if err != nil {
		t.Fatal(err)
	}
	if err := rv.set(ctx, Step{Name: "ask for what " + r.profile.Name + " holds", Spec: spec, Defaults: sc.RivalDefaults(r.profile.Name)}); err != nil {
		t.Fatal(err)
	}
	ok := true
	rv.conflict = true
	if _, err := rv.quiet(ctx); err != nil {
		fail(t, plan, "the rival: %v", err)
		ok = false
	}
	after, err := r.grants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(before, after) {
		fail(t, plan, "safety: the rival changed the Profile's grants (-before +after):\n%s", cmp.Diff(slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after))))
		ok = false
	}
	passes, err := r.quiet(ctx)
	if err != nil {
		fail(t, plan, "the Profile after the rival: %v", err)
		return false
	}
	state, err := r.state(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(base.states[s], state); diff != "" {
		fail(t, plan, "liveness: after the rival, what the plugin holds differs from the run without perturbation (-want +got):\n%s\tthen, to quiet: %v", diff, passes)
		ok = false
	}
	return ok
}
