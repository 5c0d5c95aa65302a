package plugintest

// This file holds the plans in which the world moves on while the host is
// down: a grant made and not yet recorded shows only when the Profile the
// host comes back to no longer names it.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/profilekit/profilekit/plugins"
)

// moveOn is where a Profile goes while the host is down: step next of the
// scenario, or deleted (next negative).
type moveOn struct{ next int }

// step is the change the Profile takes.
func (m moveOn) step(sc Scenario) Step {
	if m.next < 0 {
		return Step{Name: "delete the Profile", Delete: true}
	}
	return sc.Steps[m.next]
}

// CrashThenMoveOn runs, for every step s but the last and every write or
// outside call k of its first pass, a plan in which the host stops right
// after k, the Profile takes step s+1 (its spec changed, the plugin
// removed, the Profile deleted) before the host starts again, and the host
// then runs step s+1 to quiet; and, where step s+1 is not a deletion
// already, the same with the Profile deleted instead. The invariants of
// CrashAfterEveryWrite hold, against step s+1; after a deletion, the
// plugin leaves only what the garbage collector takes and retained data,
// and no outside grant ([Scenario.Grants]) names the Profile.
func (h Harness) CrashThenMoveOn(t T, sc Scenario) Plans {
	t.Helper()
	const pattern = "crash-moved-on"
	base, plans := h.begin(t, sc, pattern)
	crash := func(ctx context.Context, r *run, k int, rec *recorder) error {
		_ = r.pass(ctx, h.Client, rec, perturbation{allow: k}) // the process stops: its error goes with it
		return nil
	}
	for s := 0; s+1 < len(sc.Steps); s++ {
		if sc.Steps[s].Delete {
			break
		}
		thens := []moveOn{{next: -1}} // a deletion is checked by what it leaves, not against the baseline's
		if !sc.Steps[s+1].Delete {
			thens = append([]moveOn{{next: s + 1}}, thens...)
		}
		ks := make([]int, len(base.writes[s]))
		for k := range ks {
			ks[k] = k
		}
		for i, k := range ks {
			for _, then := range thens {
				if short(i, len(ks)) {
					plans.Skipped++
					continue
				}
				plan := fmt.Sprintf("%s %s step %d (%s) write %d of %d: %s, then %s", sc.Def.Kind(), pattern, s, sc.Steps[s].Name, k, len(ks), base.writes[s][k], then.step(sc).Name)
				h.try(&plans, plan, func() bool {
					return h.plan(t, sc, base, point{s: s, from: s - 1, k: k, plan: plan, then: &then}, crash)
				})
			}
		}
	}
	return plans
}

// deleted checks what a plan that ended in the Profile's deletion left:
// nothing that nothing takes, and no outside grant.
func (r *run) deleted(ctx context.Context, t T, plan string) bool {
	t.Helper()
	ok := true
	left, err := r.leftBehind(ctx)
	if err != nil {
		fail(t, plan, "after the deletion: %v", err)
		return false
	}
	if len(left) > 0 {
		fail(t, plan, "left behind: the deleted Profile's plugin leaves what nothing takes:\n\t%s", strings.Join(left, "\n\t"))
		ok = false
	}
	if r.sc.Grants != nil {
		grants, err := r.sc.Grants(ctx, r.profile.Name)
		if err != nil {
			t.Fatal(err)
		}
		grants = slices.DeleteFunc(grants, func(g string) bool { return r.foreign[r.generic(g)] })
		if len(grants) > 0 {
			fail(t, plan, "left behind: outside grants still name the deleted Profile:\n\t%s", strings.Join(grants, "\n\t"))
			ok = false
		}
	}
	return ok
}

// moveOn makes the watcher's bounds those of the step the Profile moved
// on to as well: a grant it gives is allowed, and only what all three
// steps hold alike is protected, user data only what that step keeps too.
// A deletion protects nothing but the user data the host retains.
func (w *watcher) moveOn(ctx context.Context, base *baseline, next int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if next < 0 {
		w.kept, w.protected = map[string]bool{}, map[string]string{}
		switch last := len(base.data) - 1; {
		case w.r.sc.Steps[last].Delete:
			next = last // the data the baseline's deletion keeps
		case w.r.sc.Retention == plugins.RetentionDelete:
			w.data, w.keeps = map[string]string{}, map[string]bool{} // the deletion may take the Profile's data
			return
		default:
			return // retained: all of it
		}
	}
	for name := range w.data {
		if _, kept := base.data[next][w.r.generic(name)]; !kept {
			delete(w.data, name) // the step moved on to may take it
		}
	}
	for name := range w.keeps {
		if _, kept := base.data[next][name]; !kept {
			delete(w.keeps, name)
		}
	}
	for g := range base.grants[next] {
		w.grants[g] = true
	}
	for g := range w.kept {
		if !base.grants[next][g] {
			delete(w.kept, g)
		}
	}
	w.protected = w.r.protects(ctx, w.protected, base.states[next])
}

// unfinished is want, what the step the Profile moved on to holds, for a
// plan whose step s the host left unfinished: when that step revokes (the
// plugin removed) and keeps what was made (retained data, the core
// plugin's namespace), what step s would have made and did not may be
// missing; nothing else may.
func (r *run) unfinished(sc Scenario, base *baseline, at point, want, state map[string]string) map[string]string {
	if at.then.next < 0 || !sc.Steps[at.then.next].Remove {
		return want
	}
	out := maps.Clone(want)
	maps.DeleteFunc(out, func(k, v string) bool {
		_, held := state[k]
		return !held && (at.from < 0 || base.states[at.from][k] != v)
	})
	return out
}
