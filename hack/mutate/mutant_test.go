package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const source = `package p

func f(a, b int) bool {
	if a <= b && a != -b {
		a++
	}
	return a%b > 0
}
`

func TestReadMutants(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	dryRun := `Dry run of ./p
    RUNNABLE CONDITIONALS_BOUNDARY at p.go:4:7
    RUNNABLE CONDITIONALS_NEGATION at p.go:4:7
    NOT COVERED CONDITIONALS_NEGATION at p.go:4:17
    RUNNABLE INVERT_NEGATIVES at p.go:4:20
    RUNNABLE INCREMENT_DECREMENT at p.go:5:4
    RUNNABLE ARITHMETIC_BASE at p.go:7:10
    RUNNABLE CONDITIONALS_BOUNDARY at p.go:7:13
    RUNNABLE CONDITIONALS_BOUNDARY at other.go:1:1
Runnable: 7, Not covered: 1
`
	got, err := readMutants(strings.NewReader(dryRun), dir, regexp.MustCompile(`^p\.go$`))
	if err != nil {
		t.Fatal(err)
	}
	want := []mutant{
		{"CONDITIONALS_BOUNDARY", "p.go", 4, 7, "<=", "<"},
		{"CONDITIONALS_NEGATION", "p.go", 4, 7, "<=", ">"},
		{"CONDITIONALS_NEGATION", "p.go", 4, 17, "!=", "=="},
		{"INVERT_NEGATIVES", "p.go", 4, 20, "-", "+"},
		{"INCREMENT_DECREMENT", "p.go", 5, 4, "++", "--"},
		{"ARITHMETIC_BASE", "p.go", 7, 10, "%", "*"},
		{"CONDITIONALS_BOUNDARY", "p.go", 7, 13, ">", ">="},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mutants (-want +got):\n%s", diff)
	}

	mutated, err := got[1].apply([]byte(source))
	if err != nil {
		t.Fatal(err)
	}
	if line := strings.Split(string(mutated), "\n")[3]; line != "\tif a > b && a != -b {" {
		t.Errorf("mutated line 4: %q", line)
	}
	if _, err := got[1].apply(mutated); err == nil {
		t.Error("a mutant applied to a source whose token moved on: want an error")
	}
}

func TestReadMutantsRefusesWhatItCannotMake(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"RUNNABLE CONDITIONALS_NEGATION at p.go:4:5", // "a", no operator
		"RUNNABLE INVERT_LOGICAL at p.go:4:12",       // not a default operator
		"RUNNABLE ARITHMETIC_BASE at p.go:40:1",      // no such line
		"RUNNABLE ARITHMETIC_BASE at missing.go:1:1",
	} {
		if _, err := readMutants(strings.NewReader(line), dir, nil); err == nil {
			t.Errorf("%s: want an error", line)
		}
	}
}

func TestFirstFailureStopsAtTheFirstFailingTest(t *testing.T) {
	stops := 0
	f := &firstFailure{stop: func() { stops++ }}
	for _, chunk := range []string{"=== RUN TestA\nok line\n    --- FA", "IL: TestA/sub (0.01s)\n", "--- FAIL: TestA (0.02s)\n"} {
		if n, err := f.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if f.first != "--- FAIL: TestA/sub (0.01s)" || stops != 1 {
		t.Errorf("first %q, stopped %d times; want the subtest's line, once", f.first, stops)
	}
}
