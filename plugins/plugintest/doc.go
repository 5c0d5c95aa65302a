// Package plugintest tests a plugin the way the research on controller
// reliability does (Sieve, OSDI 2022; Acto, SOSP 2023). It runs a
// scenario of one Profile (steps that set, change and remove the plugin's
// spec, add it again, and delete the Profile) without perturbation,
// records every write each pass sends to the API server and every call it
// makes to an outside system, and then runs one plan per write:
//
//   - intermediate state ([Harness.CrashAfterEveryWrite]): the host stops
//     right after write k and starts again with nothing of the last
//     process;
//   - stale state ([Harness.StaleAtEveryWrite]): the next pass, a second
//     replica's, decides from a cache that holds nothing written from
//     write k on, the outside-state records included;
//   - unobserved state ([Harness.UnobservedAtEveryWrite]): the event of
//     write k never reaches the cache; and two changes of the Profile come
//     as one, so that the host never sees a step;
//   - outside failures ([Harness.FailEveryOutsideCall],
//     [Harness.LoseEveryOutsideAnswer]): call k is refused before it is
//     made, or made and its answer lost;
//   - the world moving on ([Harness.CrashThenMoveOn], the pattern
//     [MovedOn]): the host stops after write k, and the Profile takes the
//     next step, or is deleted, before it starts again. It is not among
//     [ClusterPatterns] and [EveryPattern] yet: after a deletion it still
//     counts grants the plugin did not make (a foreign credential, an
//     administrator's binding) and data the deletion itself removes as
//     left behind, so a scenario asks for it by name.
//
// At every write and outside call, whatever the step before and the step
// after hold alike (an object of the plugin's, a grant, a key Observe
// reports such as a Pod Security label) must be present (protection never
// drops), and an outside call that gives a grant must find the record
// that names it already written on the API server (record before grant).
//
// The harness scores itself: with [MutantEnv] set (make mutation), each
// scenario's plans run under contract-level mutants ([Mutants]: prune
// everything then write again, record after the call, skip the sweep, call
// twice, guards that read the cache, claims never read), which decorate
// req.Objects and req.Outside without editing the plugin; a mutant is
// killed when a plan fails.
//
// After every plan the plugin must hold what the unperturbed run holds
// (liveness: its objects, and the outside state [Scenario.Observe]
// reports) and settle within a few passes, the last of which writes
// nothing (bounded cost). At every moment of the plan, after each write,
// it may not have touched an object that neither the step before nor the
// step after holds, given a grant (a RoleBinding subject, an
// AuthorizationPolicy rule, what [Scenario.Grants] reports) that neither
// gives, or deleted user data ([Scenario.Data]) the step keeps (safety).
// A deleted Profile may leave only what the garbage collector takes and
// retained data. A failing plan prints the line that reruns it; -short
// runs, for each step and pattern, the plans of the first and the last
// write the pattern perturbs. A pass that says it waits for another
// controller (Result.Waiting) is run again, as a host requeues it, after
// [Scenario.Between] acts as that controller.
//
// A plugin of your own gets the same proof from its tests, as
// examples/custom-plugin's welcome plugin does:
//
//	func TestWelcomeSurvivesEveryPerturbation(t *testing.T) {
//		h := plugintest.Harness{Client: env.Client}
//		h.Survives(t, func(*testing.T) plugintest.Scenario {
//			return plugintest.Scenario{Def: welcome.Definition(), Steps: []plugintest.Step{
//				{Name: "create"}, {Name: "change", Spec: map[string]any{"message": "hi"}},
//				{Name: "remove", Remove: true}, {Name: "add again"}, {Name: "delete the Profile", Delete: true},
//			}}
//		}, plugintest.ClusterPatterns...)
//	}
//
// # Stability
//
// Experimental, and free to change in a minor release: [Harness] with
// [Harness.Survives], [Harness.CrashAfterEveryWrite],
// [Harness.StaleAtEveryWrite], [Harness.UnobservedAtEveryWrite],
// [Harness.FailEveryOutsideCall] and [Harness.LoseEveryOutsideAnswer];
// [Pattern] with [Crash], [Stale], [Unobserved], [Refused], [Lost],
// [ClusterPatterns] and [EveryPattern]; [Scenario], [Step], [Plans],
// [Write], [T] and [PlanEnv]; the moved-on plans ([MovedOn]); the
// contract-level mutants ([Mutant], [Mutants], [MutantEnv], [Score] and
// the operators [PruneThenWrite], [RecordAfter], [SkipSweep], [CallTwice],
// [StaleGuard], [DropClaim]).
package plugintest
