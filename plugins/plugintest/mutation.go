package plugintest

// This file scores the harness: a scenario's plans run under each
// contract-level mutant, and a mutant is killed when any plan fails.

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/profilekit/profilekit/plugins"
)

// MutantEnv, set in the environment, makes Survives score the harness
// instead: it runs the scenario's plans under each mutant it names
// (comma-separated Mutant names, or "all"), reports each as killed,
// survived or not reached, and fails when one survived.
const MutantEnv = "PLUGINTEST_MUTANT"

// Score is what one mutant's run found.
type Score struct {
	// Mutant is the mutant's name.
	Mutant string
	// Reached is false when the plugin never called what the mutant
	// changes: nothing to kill.
	Reached bool
	// Killed is true when a plan failed; By is its first finding.
	Killed bool
	By     string
	// Plans are the plans run until the first failure.
	Plans int
	// Equivalent is why the scenario declares the mutant equivalent for
	// its plugin (Scenario.Equivalent), or "".
	Equivalent string
	// Pattern and Plan name what killed it: the pattern whose plans ran,
	// and the plan that failed ("" when the pattern's run without
	// perturbation did).
	Pattern, Plan string
}

// Result is the score in a word or two: killed, survived, equivalent
// (declared so, and it survived), not reached, or wrongly equivalent
// (declared so, and killed).
func (s Score) Result() string {
	switch {
	case s.Killed && s.Equivalent != "":
		return "wrongly equivalent"
	case s.Killed:
		return "killed"
	case s.Equivalent != "":
		return "equivalent"
	case !s.Reached:
		return "not reached"
	}
	return "survived"
}

// String is the Result with what shows it: the first finding of a killed
// mutant, the reason of an equivalent one, the plans run.
func (s Score) String() string {
	switch {
	case s.Killed:
		return fmt.Sprintf("%s after %d plans: %s", s.Result(), s.Plans, s.By)
	case s.Equivalent != "":
		return fmt.Sprintf("%s (survived %d plans): %s", s.Result(), s.Plans, s.Equivalent)
	}
	return fmt.Sprintf("%s (%d plans)", s.Result(), s.Plans)
}

// mutantsFrom returns the mutants that names (MutantEnv's form) picks.
func mutantsFrom(names string) ([]Mutant, error) {
	if names == "all" {
		return Mutants(), nil
	}
	var out []Mutant
	for _, n := range strings.Split(names, ",") {
		i := slices.IndexFunc(Mutants(), func(m Mutant) bool { return m.Name == strings.TrimSpace(n) })
		if i < 0 {
			return nil, fmt.Errorf("%s=%q: no mutant %q", MutantEnv, names, n)
		}
		out = append(out, Mutants()[i])
	}
	return out, nil
}

// Mutation runs the scenario newScenario makes under each mutant, with the
// patterns in turn, and stops a mutant's plans at its first failure, or
// after the first pattern when the plugin never called what it changes. It
// logs one line per mutant, "mutant <scenario> <mutant>: <score>", and one
// for make mutation's record, "record <scenario> <test>\t<mutant>\t<result>\t<pattern>\t<plan>".
func (h Harness) Mutation(t *testing.T, newScenario func(t *testing.T) Scenario, mutants []Mutant, patterns ...Pattern) []Score {
	t.Helper()
	var scores []Score
	for _, m := range mutants {
		scores = append(scores, h.score(t, newScenario, m, "", patterns))
	}
	return scores
}

// score runs the scenario under mutant m with the patterns in turn (only
// the plan named only, when set) and logs its score.
func (h Harness) score(t *testing.T, newScenario func(t *testing.T) Scenario, m Mutant, only string, patterns []Pattern) Score {
	t.Helper()
	run := &mutantRun{Mutant: m}
	score := Score{Mutant: m.Name}
	s := &catcher{t: t}
	hm := h
	hm.mutant, hm.stop, hm.only = run, s.failed, only
	if m.planned {
		// The plans that give such a mutant something to change first.
		patterns = slices.Clone(patterns)
		slices.SortStableFunc(patterns, func(a, b Pattern) int { return cmp.Compare(planning(b), planning(a)) })
	}
	for _, p := range patterns {
		if s.failed() {
			break
		}
		sc := newScenario(t)
		plans := s.run(func() Plans { return p.run(hm, s, sc) })
		score.Plans += plans.Run
		if s.failed() {
			score.Pattern = p.Name
		}
		if !run.reached.Load() && !m.planned {
			break // the plugin never calls what the mutant changes
		}
	}
	score.Reached = run.reached.Load()
	if first := s.first(); first != "" {
		score.Killed, score.By, score.Plan = true, first, s.plan()
	}
	sc := newScenario(t)
	score.Equivalent = sc.Equivalent[m.Name]
	t.Logf("mutant %s %s: %s", scenarioName(sc), m.Name, score)
	t.Logf("record %s\t%s\t%s\t%s\t%s", recordName(sc, t), m.Name, score.Result(), score.Pattern, score.Plan)
	return score
}

// mutationMode scores the harness when MutantEnv asks for it, and reports
// whether it did.
func (h Harness) mutationMode(t *testing.T, newScenario func(t *testing.T) Scenario, patterns []Pattern) bool {
	names := os.Getenv(MutantEnv)
	if names == "" {
		return false
	}
	mutants, err := mutantsFrom(names)
	if err != nil {
		t.Fatal(err)
	}
	if path := os.Getenv(MutantRecordEnv); path != "" {
		h.sample(t, newScenario, mutants, patterns, path)
		return true
	}
	for _, s := range h.Mutation(t, newScenario, mutants, patterns...) {
		switch {
		case s.Killed && s.Equivalent != "":
			t.Errorf("mutant %s is declared equivalent (%s) and was killed: the declaration is wrong", s.Mutant, s.Equivalent)
		case s.Reached && !s.Killed && s.Equivalent == "":
			t.Errorf("mutant %s survived every plan: the harness would not notice that %s", s.Mutant, mutantDoes(s.Mutant))
		}
	}
	return true
}

// planning reports whether p's plans are the ones that give a planned
// mutant (StaleGuard, DropClaim) what it changes: a name taken, a rival.
func planning(p Pattern) int {
	if p.Name == Taken.Name || p.Name == Rival.Name {
		return 1
	}
	return 0
}

// scenarioName names a scenario in the mutation report: its plugin, and
// the host's retention when it deletes user data.
func scenarioName(sc Scenario) string {
	if sc.Retention == plugins.RetentionDelete {
		return sc.Def.Kind() + "/retention-delete"
	}
	return sc.Def.Kind()
}

// recordName names a scenario in the record: its name and its test's,
// which together are unique (tests of several packages share a name).
func recordName(sc Scenario, t *testing.T) string {
	return scenarioName(sc) + " " + t.Name()
}

func mutantDoes(name string) string {
	for _, m := range Mutants() {
		if m.Name == name {
			return m.Does
		}
	}
	return name
}

// catcher is a T that keeps the findings of a mutant's plans instead of
// failing the test; Fatal ends the mutant's run.
type catcher struct {
	t        *testing.T
	mu       sync.Mutex
	findings []string
}

var _ T = (*catcher)(nil)

// errFatal ends a mutant's run at a Fatal.
type errFatal struct{}

func (c *catcher) Helper()                  {}
func (c *catcher) Name() string             { return c.t.Name() }
func (c *catcher) Context() context.Context { return c.t.Context() }

func (c *catcher) Errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.findings = append(c.findings, fmt.Sprintf(format, args...))
}

func (c *catcher) Fatalf(format string, args ...any) {
	c.Errorf(format, args...)
	panic(errFatal{})
}

func (c *catcher) Fatal(args ...any) {
	c.Errorf("%s", fmt.Sprint(args...))
	panic(errFatal{})
}

// run runs a pattern, and ends it at a Fatal.
func (c *catcher) run(f func() Plans) (p Plans) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(errFatal); !ok {
				panic(v)
			}
		}
	}()
	return f()
}

func (c *catcher) failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.findings) > 0
}

// rerunPlan finds the plan in a finding's rerun line (see fail).
var rerunPlan = regexp.MustCompile(PlanEnv + `=("(?:[^"\\]|\\.)*")`)

// plan is the plan of the first finding, "" when it names none (the run
// without perturbation failed).
func (c *catcher) plan() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.findings) == 0 {
		return ""
	}
	m := rerunPlan.FindStringSubmatch(c.findings[0])
	if m == nil {
		return ""
	}
	plan, err := strconv.Unquote(m[1])
	if err != nil {
		return ""
	}
	return plan
}

// first is the first finding, its first line.
func (c *catcher) first() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.findings) == 0 {
		return ""
	}
	line, _, _ := strings.Cut(c.findings[0], "\n")
	return line
}
