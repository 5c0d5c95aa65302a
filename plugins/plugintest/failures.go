package plugintest

// This file holds the plans in which an outside system fails a call:
// refused before it is made, or made and its answer lost.

import (
	"context"
	"errors"
)

// errRefused and errLost are the outside system's failures a plan makes.
var (
	errRefused = errors.New("plugintest: connection refused before the call reached the system")
	errLost    = errors.New("plugintest: the call was made and its answer lost")
)

// FailEveryOutsideCall runs, for every outside call k of each step's first
// pass, a plan in which that call fails before it reaches the system (a
// connection refused, a timeout), and the pass goes on as the plugin
// lets it; then the step runs to quiet. The invariants of
// CrashAfterEveryWrite hold.
func (h Harness) FailEveryOutsideCall(t T, sc Scenario) Plans {
	t.Helper()
	return h.each(t, sc, "refused", outsideCall, func(ctx context.Context, r *run, k int, rec *recorder) error {
		_ = r.pass(ctx, h.Client, rec, perturbation{allow: -1, fail: func(i int, made bool) error {
			if i == k && !made {
				return errRefused
			}
			return nil
		}})
		return nil
	})
}

// LoseEveryOutsideAnswer runs, for every outside call k of each step's
// first pass, a plan in which the call is made and succeeds but the
// plugin sees a failure (the ambiguous write: a reset connection, a
// timeout after the server acted); then the step runs to quiet. The
// invariants of CrashAfterEveryWrite hold.
func (h Harness) LoseEveryOutsideAnswer(t T, sc Scenario) Plans {
	t.Helper()
	return h.each(t, sc, "lost", outsideCall, func(ctx context.Context, r *run, k int, rec *recorder) error {
		_ = r.pass(ctx, h.Client, rec, perturbation{allow: -1, fail: func(i int, made bool) error {
			if i == k && made {
				return errLost
			}
			return nil
		}})
		return nil
	})
}
