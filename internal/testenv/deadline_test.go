package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// outOfTime makes the test binary run runOutOfTime instead of its tests,
// killed runKilled.
const (
	outOfTime = "TESTENV_OUT_OF_TIME"
	killed    = "TESTENV_KILLED"
)

func TestMain(m *testing.M) {
	if os.Getenv(outOfTime) == "1" {
		os.Exit(runOutOfTime())
	}
	if os.Getenv(killed) == "1" {
		os.Exit(runKilled())
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

// runKilled starts a control plane with kube-controller-manager,
// PostgreSQL with a backend busy with a query, and Azurite, prints the
// servers' folders and the backend's process ID, and kills itself: no
// deferred call, no Cleanup, no timer runs, as when a goroutine panics or
// go test (or a mutation tool) kills the binary.
func runKilled() int {
	e, err := Start(Options{ControllerManager: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("etcd", e.env.ControlPlane.Etcd.DataDir)
	fmt.Println("kube-apiserver", e.env.ControlPlane.APIServer.CertDir)
	fmt.Println("kube-controller-manager", e.cm.Dir())
	pg, err := StartPostgres()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("postgres", pg.dir)
	// A backend of the server must go with it. This one, busy with a query,
	// goes within seconds even if the server is killed; one waiting for a
	// lightweight lock (seen: in CREATE DATABASE) never does, which is why
	// the reaper asks the server to end its backends first (reaper.go).
	ctx := context.Background() //nolint:forbidigo // a helper binary's main, not a test: it has no t
	conn, err := pgx.Connect(ctx, pg.DSN(pg.User, pg.Password, "postgres", "require", ""))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("backend", conn.PgConn().PID())
	go func() {
		_, _ = conn.Exec(ctx, "SELECT count(*) FROM generate_series(1, 100000000000)")
	}()
	az, err := StartAzurite()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("azurite", az.dir)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestServersGoWhenTheBinaryIsKilled runs a test binary that starts a
// control plane and is killed: a moment later no server of it runs and
// no folder of theirs is left.
func TestServersGoWhenTheBinaryIsKilled(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), os.Args[0])
	cmd.Env = append(os.Environ(), killed+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the binary that kills itself: %v, want killed\nstdout:\n%s\nstderr:\n%s", err, out, &stderr)
	}
	dirs := printedFolders(t, out, 5)
	backend := printedBackend(t, out)
	deadline := time.Now().Add(15 * time.Second)
	for {
		var left []string
		if _, err := os.Stat("/proc/" + backend); err == nil {
			left = append(left, "PostgreSQL's busy backend, pid "+backend)
		}
		for name, dir := range dirs {
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				left = append(left, fmt.Sprintf("%s's folder %s (%v)", name, dir, err))
			}
			if pids := processesNaming(t, dir); len(pids) > 0 {
				left = append(left, fmt.Sprintf("%s, pids %v", name, pids))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("15 s after the binary was killed, still there: %s", strings.Join(left, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// printedFolders reads the "name folder" lines a helper binary printed,
// and fails unless there are n.
func printedFolders(t *testing.T, out []byte, n int) map[string]string {
	t.Helper()
	dirs := map[string]string{}
	for s := bufio.NewScanner(bytes.NewReader(out)); s.Scan(); {
		if name, dir, ok := strings.Cut(s.Text(), " "); ok && filepath.IsAbs(dir) {
			dirs[name] = dir
		}
	}
	if len(dirs) != n {
		t.Fatalf("folders printed: %v, want %d\n%s", dirs, n, out)
	}
	return dirs
}

// printedBackend returns the process ID of the busy PostgreSQL backend
// that runKilled printed.
func printedBackend(t *testing.T, out []byte) string {
	t.Helper()
	for s := bufio.NewScanner(bytes.NewReader(out)); s.Scan(); {
		if pid, ok := strings.CutPrefix(s.Text(), "backend "); ok {
			return pid
		}
	}
	t.Fatalf("no backend printed:\n%s", out)
	return ""
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
	for name, dir := range printedFolders(t, out, 2) {
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
