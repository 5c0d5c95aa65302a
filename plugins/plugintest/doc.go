// Package plugintest tests a plugin the way the research on controller
// reliability does (Sieve, OSDI 2022; Acto, SOSP 2023): it runs a
// scenario of one Profile without perturbation, records every write each
// pass sends, and then runs one plan per write in which the host stops
// right after it (CrashAfterEveryWrite) or the next pass decides from a
// cache that has not seen it (StaleAtEveryWrite), and one plan per call
// to an outside system in which the call fails before it is made
// (FailEveryOutsideCall) or is made and its answer lost
// (LoseEveryOutsideAnswer). After every plan the
// plugin must hold what the unperturbed run holds, settle within a few
// passes, and never have touched an object that neither the step before
// nor the step after holds. A failing plan prints the line that reruns it.
//
// A plugin of your own gets the same proof from its tests:
//
//	func TestCrashSafe(t *testing.T) {
//		h := plugintest.Harness{Client: env.Client}
//		h.CrashAfterEveryWrite(t, plugintest.Scenario{
//			Def:   welcome.Definition(),
//			Steps: []plugintest.Step{{Name: "create"}, {Name: "change", Spec: map[string]any{"message": "hi"}}, {Name: "remove", Remove: true}},
//		})
//	}
//
// # Stability
//
// Experimental, and free to change in a minor release: [Harness] with
// [Harness.CrashAfterEveryWrite], [Harness.StaleAtEveryWrite],
// [Harness.FailEveryOutsideCall] and [Harness.LoseEveryOutsideAnswer];
// [Scenario], [Step], [Plans], [Write], [T] and [PlanEnv].
package plugintest
