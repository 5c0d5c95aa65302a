package plugintest

import "testing"

// Pattern is one way the harness perturbs a scenario's passes: a method
// of Harness.
type Pattern struct {
	// Name names the pattern in subtests and messages.
	Name string
	run  func(Harness, T, Scenario) Plans
}

// The patterns: the host stopping, a stale view, an unobserved event (and
// two steps seen as one), an outside call refused, an outside answer lost,
// the host stopping while the Profile moves on, a name taken, a rival, and
// the outside-state record lost before a revoke.
var (
	Crash      = Pattern{Name: "crash", run: Harness.CrashAfterEveryWrite}
	Stale      = Pattern{Name: "stale", run: Harness.StaleAtEveryWrite}
	Unobserved = Pattern{Name: "unobserved", run: Harness.UnobservedAtEveryWrite}
	Refused    = Pattern{Name: "refused", run: Harness.FailEveryOutsideCall}
	Lost       = Pattern{Name: "lost", run: Harness.LoseEveryOutsideAnswer}
	MovedOn    = Pattern{Name: "crash-moved-on", run: Harness.CrashThenMoveOn}
	Taken      = Pattern{Name: "taken", run: Harness.TakenNames}
	Rival      = Pattern{Name: "rival", run: Harness.Rivals}
	RecordLost = Pattern{Name: "record-lost", run: Harness.LoseRecordThenRevoke}
)

// ClusterPatterns perturb what a pass writes to and reads from the API
// server: every plugin's. EveryPattern adds its calls to outside systems.
var (
	ClusterPatterns = []Pattern{Crash, Stale, Unobserved, Taken}
	EveryPattern    = []Pattern{Crash, Stale, Unobserved, Taken, Refused, Lost, Rival, RecordLost}
)

// Survives runs the scenario newScenario makes (once per pattern, so that
// each may have its own outside servers) under each pattern, in a subtest
// of t named for it, and logs how many plans ran, failed and were left
// out. A pattern that has nothing to perturb fails: the scenario does not
// exercise it. With MutantEnv set, it scores the harness instead (see
// Mutation).
func (h Harness) Survives(t *testing.T, newScenario func(t *testing.T) Scenario, patterns ...Pattern) {
	t.Helper()
	if h.mutationMode(t, newScenario, patterns) {
		return
	}
	for _, p := range patterns {
		t.Run(p.Name, func(t *testing.T) {
			if h.Parallel {
				t.Parallel()
			}
			sc := newScenario(t)
			plans := p.run(h, t, sc)
			t.Logf("%s: %d %s plans, %d failed, %d left out", sc.Def.Kind(), plans.Run, p.Name, plans.Failed, plans.Skipped)
			if plans.Run+plans.Skipped == 0 && p.needs(sc) {
				t.Errorf("no %s plan: the scenario gives the pattern nothing to perturb", p.Name)
			}
		})
	}
}

// needs reports whether the scenario must give the pattern something to
// perturb: the taken plans need objects the plugin owns, the rival plans
// a scenario that says how a rival may ask, the record-lost plans one
// that says what grants the plugin gives.
func (p Pattern) needs(sc Scenario) bool {
	switch p.Name {
	case Taken.Name:
		return len(sc.Def.Owns) > 0
	case Rival.Name:
		return sc.RivalDefaults != nil
	case RecordLost.Name:
		return sc.Grants != nil
	}
	return true
}
