package plugintest

// This file holds the mutation sample that make test runs: each mutant
// under the one plan that killed it when make mutation last ran, as
// mutation tools rerun only a mutant's killing test from their history.

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// MutantRecordEnv, set in the environment with MutantEnv, names the
// record make mutation writes (plugins/plugintest/testdata/mutation.txt,
// one line per scenario, its test and mutant: its result and what killed
// it). Then
// Survives runs each mutant the record holds as killed under the one
// pattern and plan that killed it, and fails when it survives that plan,
// when the record holds the mutant as surviving, or holds nothing for it:
// a cheap sample, for make test, of what make mutation measures whole.
// Mutants recorded or declared equivalent, and those recorded not
// reached, are not run.
const MutantRecordEnv = "PLUGINTEST_MUTANT_RECORD"

// recorded is one line of the record.
type recorded struct{ result, pattern, plan string }

// readRecord reads the record at path, by scenario and test, and mutant.
func readRecord(path string) (map[[2]string]recorded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[[2]string]recorded{}
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		line := lines.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			return nil, fmt.Errorf("%s: %q: want 5 fields separated by tabs", path, line)
		}
		out[[2]string{f[0], f[1]}] = recorded{result: f[2], pattern: f[3], plan: f[4]}
	}
	return out, lines.Err()
}

// writeOf cuts a plan's description after its write's index: how many
// writes the pass makes, and which object the write names, may differ
// from run to run of a mutant (a pruned object's deletes, say).
var writeOf = regexp.MustCompile(`(write \d+) of \d+: .*$`)

// planKey is the part of a plan's description that names it across runs.
func planKey(plan string) string { return writeOf.ReplaceAllString(plan, "$1") }

// noPlan matches no plan: only the pattern's run without perturbation
// runs (what killed a mutant whose record names no plan).
const noPlan = "\x00"

// sample runs the mutation sample for the scenario newScenario makes.
func (h Harness) sample(t *testing.T, newScenario func(t *testing.T) Scenario, mutants []Mutant, patterns []Pattern, path string) {
	t.Helper()
	record, err := readRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := newScenario(t)
	name := scenarioName(sc)
	for _, m := range mutants {
		rec, ok := record[[2]string{recordName(sc, t), m.Name}]
		switch {
		case !ok:
			t.Errorf("mutant %s %s: the record %s holds no result for it: run make mutation", name, m.Name, path)
			continue
		case sc.Equivalent[m.Name] != "" || rec.result == "equivalent" || rec.result == "not reached":
			t.Logf("mutant %s %s: %s in the record, not run in the sample", name, m.Name, rec.result)
			continue
		case rec.result != "killed":
			t.Errorf("mutant %s %s: %s in the record: the harness would not notice that %s", name, m.Name, rec.result, m.Does)
			continue
		}
		i := slices.IndexFunc(patterns, func(p Pattern) bool { return p.Name == rec.pattern })
		if i < 0 {
			t.Errorf("mutant %s %s: the record's pattern %q is not among the scenario's: run make mutation", name, m.Name, rec.pattern)
			continue
		}
		only := cmp.Or(rec.plan, noPlan)
		if s := h.score(t, newScenario, m, only, patterns[i:i+1]); !s.Killed {
			t.Errorf("mutant %s %s survived the plan that killed it in the record (%s %q): the harness no longer notices that %s; run make mutation",
				name, m.Name, rec.pattern, rec.plan, m.Does)
		}
	}
}
