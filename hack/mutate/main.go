// Command mutate runs, one at a time, the source-level mutants of one package
// that gremlins lists in its dry run, each against the package's tests, and
// stops each test binary at its first failing test. It is how the mutants
// gremlins does not run (a tagless switch's cases, go-gremlins/gremlins#298)
// or cannot run in time (a package whose tests take minutes) are judged; make
// mutation-hand runs it.
//
// Each mutant is made in a copy of the module (the files git tracks and
// those it does not ignore; bin/ linked, not copied), the package's test
// binary built there and run in the package's folder with -test.short,
// -test.count=1 and -test.failfast, and -test.skip when given. A mutant is
// killed when a test fails or the binary panics, lived when the binary
// passes, timed out when it runs past -timeout, not compiled when the build
// fails. A line per mutant is appended to -out, tab-separated:
//
//	gitea/ownership.go:94:25 >-><=	CONDITIONALS_BOUNDARY	KILLED	14s	--- FAIL: TestPlanEnsure (0.00s)
//
// A mutant already in -out is not run again, so an interrupted run goes on
// where it stopped. Run from the module root:
//
//	gremlins unleash --dry-run ./gitea > dry-run.txt
//	mutate -pkg gitea -dry-run dry-run.txt -skip 'Survives?EveryPerturbation' -out gitea.txt
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

func main() {
	var (
		pkg     = flag.String("pkg", "", "the package's folder, relative to the module root (gitea, plugins/blobcsi)")
		dryRun  = flag.String("dry-run", "", "gremlins' dry-run output for the package")
		only    = flag.String("files", "", "a regular expression: only the mutants of the files it matches")
		skip    = flag.String("skip", "", "the tests left out of each mutant's run (go test -skip)")
		out     = flag.String("out", "", "the record a line per mutant is appended to")
		timeout = flag.Duration("timeout", 10*time.Minute, "the longest a mutant's tests may run")
	)
	flag.Parse()
	if err := run(*pkg, *dryRun, *only, *skip, *out, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

func run(pkg, dryRun, only, skip, out string, timeout time.Duration) error {
	if pkg == "" || dryRun == "" || out == "" {
		return errors.New("-pkg, -dry-run and -out are required")
	}
	var onlyFiles *regexp.Regexp
	if only != "" {
		var err error
		if onlyFiles, err = regexp.Compile(only); err != nil {
			return fmt.Errorf("-files: %w", err)
		}
	}
	listing, err := os.Open(dryRun)
	if err != nil {
		return err
	}
	defer listing.Close()
	mutants, err := readMutants(listing, pkg, onlyFiles)
	if err != nil {
		return err
	}
	done, err := recorded(out)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := copyModule(work); err != nil {
		return err
	}
	record, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer record.Close()
	for _, m := range mutants {
		if done[m.ID(pkg)] {
			continue
		}
		result, err := judge(work, pkg, skip, timeout, m)
		if err != nil {
			return err
		}
		line := strings.Join([]string{m.ID(pkg), m.Operator, result.outcome, result.took.Round(time.Second).String(), result.first}, "\t")
		fmt.Println(line)
		if _, err := fmt.Fprintln(record, line); err != nil {
			return err
		}
	}
	return nil
}

// recorded reads the mutants an earlier run judged.
func recorded(out string) (map[string]bool, error) {
	done := map[string]bool{}
	data, err := os.ReadFile(out)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	for line := range strings.Lines(string(data)) {
		id, _, _ := strings.Cut(line, "\t")
		done[id] = true
	}
	return done, err
}

// copyModule copies the module into work as make breakages does: the files
// git tracks and those it does not ignore, bin/ linked.
func copyModule(work string) error {
	files, err := exec.Command("git", "ls-files", "-co", "--exclude-standard", "-z").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for name := range strings.SplitSeq(strings.TrimRight(string(files), "\x00"), "\x00") {
		if name == "bin" || strings.HasPrefix(name, "bin/") {
			continue
		}
		data, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted and not yet committed
		}
		if err != nil {
			return err
		}
		target := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
	}
	bin, err := filepath.Abs("bin")
	if err != nil {
		return err
	}
	return os.Symlink(bin, filepath.Join(work, "bin"))
}

type result struct {
	outcome string // KILLED, LIVED, TIMEOUT, NOTCOMPILE
	took    time.Duration
	first   string // the first failing test's line, or the build's first error
}

// judge makes the mutant in work, runs the package's tests against it and
// puts the source back.
func judge(work, pkg, skip string, timeout time.Duration, m mutant) (result, error) {
	file := filepath.Join(work, pkg, m.File)
	original, err := os.ReadFile(file)
	if err != nil {
		return result{}, err
	}
	mutated, err := m.apply(original)
	if err != nil {
		return result{}, err
	}
	if err := os.WriteFile(file, mutated, 0o644); err != nil {
		return result{}, err
	}
	defer os.WriteFile(file, original, 0o644) //nolint:errcheck // the next mutant's apply fails loudly on a source not put back

	binary := filepath.Join(work, "mutant.test")
	build := exec.Command("go", "test", "-c", "-o", binary, "./"+pkg)
	build.Dir = work
	if output, err := build.CombinedOutput(); err != nil {
		// The first error, after go's "# package [package.test]" header.
		var first string
		for line := range strings.Lines(string(output)) {
			if !strings.HasPrefix(line, "#") {
				first = strings.TrimSpace(line)
				break
			}
		}
		return result{outcome: "NOTCOMPILE", first: first}, nil
	}
	return runTests(binary, filepath.Join(work, pkg), skip, timeout)
}

// runTests runs the test binary and stops it at the first failing test.
func runTests(binary, dir, skip string, timeout time.Duration) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{"-test.short", "-test.count=1", "-test.failfast"}
	if skip != "" {
		args = append(args, "-test.skip", skip)
	}
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The test servers the binary starts are its children: stop them all.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	output := &firstFailure{stop: cancel}
	cmd.Stdout, cmd.Stderr = output, output
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	switch {
	case output.first != "":
		return result{outcome: "KILLED", took: took, first: output.first}, nil
	case ctx.Err() != nil:
		return result{outcome: "TIMEOUT", took: took}, nil
	case errors.As(err, new(*exec.ExitError)):
		return result{outcome: "KILLED", took: took, first: err.Error()}, nil
	case err != nil:
		return result{}, err
	}
	return result{outcome: "LIVED", took: took}, nil
}

// firstFailure reads a test binary's output and calls stop at the first
// line that says a test or a subtest failed, or the binary panicked.
type firstFailure struct {
	partial []byte
	first   string
	stop    func()
}

func (f *firstFailure) Write(p []byte) (int, error) {
	if f.first != "" {
		return len(p), nil
	}
	f.partial = append(f.partial, p...)
	for {
		line, rest, ok := bytes.Cut(f.partial, []byte("\n"))
		if !ok {
			return len(p), nil
		}
		f.partial = rest
		line = bytes.TrimLeft(line, " ")
		if bytes.HasPrefix(line, []byte("--- FAIL")) || bytes.HasPrefix(line, []byte("panic:")) {
			f.first = string(line)
			f.stop()
			return len(p), nil
		}
	}
}
