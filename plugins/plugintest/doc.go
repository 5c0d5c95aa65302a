// Package plugintest tests a plugin the way the research on controller
// reliability does (Sieve, OSDI 2022; Acto, SOSP 2023), and measures its
// own power the way mutation testing does (PIT's mutation score; Google's
// mutation testing at scale, ICSE-SEIP 2018). It runs a scenario of one
// Profile (steps that set, change and remove the plugin's spec, add it
// again, and delete the Profile) without perturbation, records every write
// each pass sends to the API server and every call it makes to an outside
// system, and then runs plans that perturb it.
//
// # Patterns
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
//   - the world moving on ([Harness.CrashThenMoveOn], the pattern
//     [MovedOn]): the host stops after write k, and the Profile takes the
//     next step, or is deleted, before it starts again; a grant made and
//     not yet recorded shows only then. A scenario asks for it by name:
//     it is not among [ClusterPatterns] and [EveryPattern], because it
//     doubles the crash plans of a -short run that already takes longer
//     than make test's budget. It found a bug in the volumes plugin (a
//     host that stopped between taking back a home volume's reservation
//     and deleting its claim left the claim waiting for good once the
//     plugin was added again), whose tests run the plans of that step;
//   - a name taken ([Harness.TakenNames], [Taken]): someone else (a
//     tenant, another controller) holds an object of a name the plugin
//     wants, before the first step or, in a namespace the plugin makes,
//     once it is quiet; the passes must come to a terminal Conflict, not
//     a retry loop, and never write or delete it;
//   - outside failures ([Harness.FailEveryOutsideCall],
//     [Harness.LoseEveryOutsideAnswer]): call k is refused before it is
//     made, or made and its answer lost;
//   - a rival ([Harness.Rivals], [Rival]): a second Profile asks for what
//     the first holds in a shared space (its cloud identity), under host
//     defaults that allow it to ask ([Scenario.RivalDefaults]); the claim
//     must refuse it;
//   - a record lost ([Harness.LoseRecordThenRevoke], [RecordLost]): once a
//     step is quiet, the Profile's outside-state record is deleted (an
//     administrator's mistake, a restore without it), and then the Profile
//     is deleted, or the next step removes the plugin; revocation fails
//     closed, and no outside grant ([Scenario.Grants]) may name the Profile
//     after it, whatever the record said.
//
// [ClusterPatterns] are every plugin's; [EveryPattern] adds those of
// outside systems. -short runs, for each step and pattern, the plans of the
// first and the last write the pattern perturbs.
//
// Each pass sees what a host gives it: req.Client reads what a host's
// cache holds (Profiles, and objects with profilekit's managed-by label:
// a tenant's object or a namespace the upstream controller made is not
// there), req.Watched the kinds the plugin watches, req.Live the API
// server. A pass that says it waits for another controller
// (Result.Waiting) is run again, as a host requeues it, after
// [Scenario.Between] acts as that controller.
//
// # Invariants
//
// After every plan the plugin must hold what the unperturbed run holds
// (liveness: its objects, and the outside state [Scenario.Observe]
// reports) and settle within a few passes, the last of which writes
// nothing (bounded cost). At every write and outside call of a plan:
//
//   - it touches no object that neither the step before nor the step after
//     holds, gives no grant (a RoleBinding subject, an AuthorizationPolicy
//     rule, what [Scenario.Grants] reports) that neither gives, and deletes
//     no user data ([Scenario.Data]) that the step keeps, including data
//     made during the plan, from the first check that sees it: a pass that
//     decides from a stale view may not delete what the pass before it
//     made, not even to make it again (safety);
//   - protection never drops: whatever the step before and the step after
//     both hold (an object of the plugin's, a grant, a key Observe reports
//     such as a Pod Security label) is present, even when its content
//     changes (a quota tightened); only an object the API server refuses
//     to change in place (a RoleBinding's roleRef, asked with a dry-run
//     update) may be deleted and made again;
//   - record before grant: an outside call that gives a grant finds the
//     record that names it already written on the API server.
//
// A deleted Profile may leave only what the garbage collector takes and
// retained data ([Scenario.Retained]), and no outside grant; a removed
// plugin, no outside grant, no outside state but retained data, and no key
// of its outside-state record but those it remembers
// ([Scenario.Remembered]): a key left names a piece it still claims. Grants there
// before the plugin's first pass (a pipeline's credential on the
// Profile's identity) are someone else's and may stay. A failing plan
// prints the line that reruns it ([PlanEnv]).
//
// # Scoring the harness: contract-level mutants
//
// With [MutantEnv] set (make mutation), each scenario's plans run under
// contract-level mutants ([Mutants]), bugs made at the boundary between a
// plugin and its host by decorating req.Objects, req.Outside and the
// request's readers, without editing any plugin. A mutant is killed when a
// plan fails; it is reached only when it changed what the plugin was told
// or did:
//
//   - [PruneThenWrite]: a Sync or Mark that changes anything first deletes
//     every object (gives up every key) of the plugin's, then writes again;
//     reached when it pruned. Killed by protection never drops.
//   - [RecordAfter]: EnsureAhead records after the call, as Ensure does;
//     reached when the call was made. Killed by record before grant.
//   - [SkipSweep]: Sweep removes nothing; reached when the record held a
//     key it would have taken. Killed by what a removal or deletion
//     leaves (a grant, outside state, a record key that still claims a
//     retained container), and by liveness when a removed grant comes
//     back.
//   - [CallTwice]: every outside call is made twice; reached when a call
//     ran. Killed where a call is not idempotent; a plugin whose calls are
//     all idempotent declares it equivalent (below).
//   - [StaleGuard]: the guards read the host's cache, not the API server
//     (req.Live, the Applier's live reader, the reader given to Mark and
//     Annotate); reached when such a read answered otherwise than the API
//     server. Killed by the taken plans (a tenant's object is not in the
//     cache, and the plugin retries for ever instead of a Conflict) and by
//     a foreign object a plugin annotates (not in the cache either).
//   - [DropClaim]: Claim and HeldElsewhere find no other holder; reached
//     when one held it. Killed by the rival plans.
//
// A mutant that cannot change what a plugin does is declared in its
// scenario ([Scenario.Equivalent]) with the proof: make mutation counts it
// as equivalent, and fails when it is killed after all. No mutant may be
// declared equivalent to quiet a survivor.
//
// make mutation prints a table of plugin, mutant and result (killed,
// survived, equivalent, not reached, wrongly equivalent), each plugin's
// score (killed of the mutants it reached that are not equivalent; the
// equivalent; the not reached), then each survivor with the sentence that
// says what the harness missed; bin/mutation.log holds every finding, and
// a killed mutant's first finding names the plan that killed it, with the
// line that reruns it. The run of
// every mutant writes its record (plugins/plugintest/testdata/mutation.txt:
// scenario and test, mutant, result, pattern and plan); make test runs the sample
// ([MutantRecordEnv]): each mutant the record holds as killed under the
// one plan that killed it, and fails when it survives, or when the record
// holds a survivor or nothing for it.
//
// # Source-level mutation
//
// make mutation-source runs gremlins (pinned, installed into bin/), a Go
// mutation tool that mutates arithmetic, comparisons and increments in a
// package's code and runs that package's tests for each mutant. It runs
// over the packages of SOURCE_MUTATION_PKGS (by default those scored so
// far, plugins/outside and opa among them) with -short, and prints each
// package's efficacy (killed of killed and lived) and the mutants that
// lived; testdata/mutation-source.txt records what was done about each.
// SOURCE_MUTATION_SKIPS leaves tests out of each mutant's run, per package
// (apps' harness scenario; volumes' too, and its tests that wait on
// kube-controller-manager; budgets' load tests); a mutant that lives
// without them is then run against the package's whole tests.
// go-mutesting, the other Go mutation tool, is not among the modules this
// project's builds can install.
//
// make mutation-hand MUTATION_HAND_PKG=<package> runs the same mutants of
// one package (gremlins' dry run lists them) without gremlins: hack/mutate
// makes each in a copy of the module and runs the package's -short tests,
// stopping the test binary at its first failing test, so a package whose
// tests take minutes is judged in hours rather than days; it also runs the
// cases of a tagless switch, which gremlins calls not covered.
// MUTATION_HAND_FILES picks files, MUTATION_HAND_SKIP leaves tests out; the
// record in bin/mutation-hand/ lets an interrupted run go on.
//
// # Breakages
//
// make breakages proves that the harness alone, in make test's -short
// sample, catches bugs a reviewer would plant: each patch in
// plugins/plugintest/testdata/breakages breaks one plugin's source (a
// pass that prunes everything before it writes again, a namespace's keys
// taken off and set again, a grant made before its record, a revoke that
// trusts its record, a claim deleted from a stale view), and the target
// applies it to a copy of the tree, runs that plugin's harness test and
// nothing else, and fails unless the test fails with a plan; it prints
// each failing plan's findings and, per patch, the first plan that caught
// it. To add one, break the plugin in your tree (its source, never the
// harness or the tests), save git diff as
// <NN>-<plugin>-<what>.patch there with a first line "# Breaks <plugin>:
// <what>", and undo the change; the target runs the EveryPerturbation
// tests of ./plugins/<plugin> (a plugin whose scenario lives elsewhere, as
// irsa's in this package, gets a line in the Makefile's case). A breakage
// the harness misses asks for a plan or an invariant, for every plugin,
// never for a weaker patch.
//
// # A plugin of your own
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
// and make mutation scores the harness on it with the built-in plugins.
//
// # Stability
//
// Experimental, and free to change in a minor release: [Harness] with
// [Harness.Survives], [Harness.CrashAfterEveryWrite],
// [Harness.StaleAtEveryWrite], [Harness.UnobservedAtEveryWrite],
// [Harness.CrashThenMoveOn], [Harness.TakenNames],
// [Harness.FailEveryOutsideCall], [Harness.LoseEveryOutsideAnswer],
// [Harness.Rivals], [Harness.LoseRecordThenRevoke] and [Harness.Mutation];
// [Pattern] with [Crash], [Stale], [Unobserved], [MovedOn], [Taken],
// [Refused], [Lost], [Rival], [RecordLost], [ClusterPatterns] and
// [EveryPattern]; [Scenario], [Step], [Plans],
// [Write], [T] and [PlanEnv]; the contract-level mutants ([Mutant],
// [Mutants], [MutantEnv], [MutantRecordEnv], [Score] and the operators
// [PruneThenWrite], [RecordAfter], [SkipSweep], [CallTwice],
// [StaleGuard], [DropClaim]).
package plugintest
