package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// endsBadly makes the test binary run endBadly instead of its tests: "panic"
// or "kill".
const endsBadly = "TESTENV_ENDS_BADLY"

func TestMain(m *testing.M) {
	if how := os.Getenv(endsBadly); how != "" {
		os.Exit(endBadly(how))
	}
	os.Exit(m.Run())
}

// endBadly starts a control plane with kube-controller-manager and
// PostgreSQL, prints their folders, and ends without stopping any: a
// goroutine panics (as go test's -timeout makes one do), or the binary is
// killed.
func endBadly(how string) int {
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
	switch how {
	case "panic":
		go func() { panic("a test's goroutine panics") }()
	case "kill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	select {}
}

// TestServersEndWithTheBinary runs test binaries that start a control plane,
// kube-controller-manager and PostgreSQL, and end without stopping them:
// once each has ended, none of those runs and none of their folders is left.
func TestServersEndWithTheBinary(t *testing.T) {
	for how, exitCode := range map[string]int{"panic": 2, "kill": -1} {
		t.Run(how, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0])
			cmd.Env = append(os.Environ(), endsBadly+"="+how)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			// The reaper shares the binary's stderr: Output returns once the
			// reaper is done.
			out, err := cmd.Output()
			if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != exitCode {
				t.Fatalf("the binary that ends by %s: %v, want exit code %d\nstdout:\n%s\nstderr:\n%s", how, err, exitCode, out, &stderr)
			}
			if !strings.Contains(stderr.String(), "the test binary ended with its servers running: killed") {
				t.Errorf("the reaper did not say what it killed; stderr:\n%s", &stderr)
			}
			dirs := map[string]string{}
			for s := bufio.NewScanner(bytes.NewReader(out)); s.Scan(); {
				if name, dir, ok := strings.Cut(s.Text(), " "); ok && filepath.IsAbs(dir) {
					dirs[name] = dir
				}
			}
			if len(dirs) != 4 {
				t.Fatalf("folders printed: %v, want etcd's, kube-apiserver's, kube-controller-manager's and PostgreSQL's\n%s", dirs, out)
			}
			for name, dir := range dirs {
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s's folder %s after the binary ended: %v, want it gone", name, dir, err)
				}
				if pids := processesNaming([]string{dir}); len(pids) > 0 {
					t.Errorf("%s still runs after the binary ended (pids %v, with %s in their command lines)", name, pids, dir)
				}
			}
		})
	}
}

// TestProcessesNamingMatchesWholeNames: a folder's name is matched as a
// whole path element, never as the start of a longer name.
func TestProcessesNamingMatchesWholeNames(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		arg  string
		want bool
	}{
		{"--data-dir=" + dir, true},
		{dir + "/data", true},
		{dir + "1", false},
		{dir + "1/data", false},
	} {
		// The shell waits for its sleep and keeps tc.arg in its command line.
		cmd := exec.CommandContext(t.Context(), "sh", "-c", "sleep 30; :", "sh", tc.arg)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pids := processesNaming([]string{dir})
		if got := len(pids) == 1 && pids[0] == cmd.Process.Pid; got != tc.want {
			t.Errorf("argument %q: processes naming %s = %v, want the sleep's (%d) %v", tc.arg, dir, pids, cmd.Process.Pid, tc.want)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}
