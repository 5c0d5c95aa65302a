package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// outOfTime makes the test binary run runOutOfTime instead of its tests.
const outOfTime = "TESTENV_OUT_OF_TIME"

func TestMain(m *testing.M) {
	if os.Getenv(outOfTime) == "1" {
		os.Exit(runOutOfTime())
	}
	os.Exit(m.Run())
}

// runOutOfTime starts a control plane and PostgreSQL, prints their data
// folders, and exits when -test.timeout is up without stopping either, as
// the timeout's panic does.
func runOutOfTime() int {
	e, err := Start(Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("etcd", e.env.ControlPlane.Etcd.DataDir)
	pg, err := StartPostgres()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("postgres", pg.dir)
	timeout := flag.Lookup("test.timeout").Value.(flag.Getter).Get().(time.Duration)
	time.Sleep(time.Until(binaryStart.Add(timeout)))
	return 2
}

// TestServersStopBeforeTimeout runs a test binary that starts a control
// plane and PostgreSQL and runs out of time: when it exits, neither runs
// and neither's data folder is left.
func TestServersStopBeforeTimeout(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.timeout=45s")
	cmd.Env = append(os.Environ(), outOfTime+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("the binary that runs out of time: %v, want exit code 2\nstdout:\n%s\nstderr:\n%s", err, out, &stderr)
	}
	dirs := map[string]string{}
	for s := bufio.NewScanner(bytes.NewReader(out)); s.Scan(); {
		if name, dir, ok := strings.Cut(s.Text(), " "); ok && filepath.IsAbs(dir) {
			dirs[name] = dir
		}
	}
	if len(dirs) != 2 {
		t.Fatalf("data folders printed: %v, want etcd's and PostgreSQL's\n%s", dirs, out)
	}
	for name, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s's data folder %s after the timeout: %v, want it gone", name, dir, err)
		}
		if pids := processesNaming(t, dir); len(pids) > 0 {
			t.Errorf("%s still runs after the timeout (pids %v, with %s in their command lines)", name, pids, dir)
		}
	}
}

// processesNaming returns the processes whose command line holds s.
func processesNaming(t *testing.T, s string) []string {
	t.Helper()
	lines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, path := range lines {
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, filepath.Base(filepath.Dir(path)))
		}
	}
	return pids
}
