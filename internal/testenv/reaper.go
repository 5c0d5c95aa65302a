package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// reaperMode makes a test binary run as its own reaper (see reapOnExit)
// instead of its tests.
const reaperMode = "PROFILEKIT_TESTENV_REAPER"

func init() {
	if os.Getenv(reaperMode) == "1" {
		os.Exit(reap(os.Stdin, os.Stderr))
	}
}

var reaper struct {
	once sync.Once
	w    io.WriteCloser
	err  error
	mu   sync.Mutex
}

// reapOnExit has every process whose command line names one of dirs killed,
// and dirs removed, once this test binary has ended, however it ends: a
// panic (go test's -timeout is one) runs no deferred call and no Cleanup,
// and without this a package that panics leaves its kube-apiserver, etcd
// and PostgreSQL running, with their data folders on disk, for every
// package the run has still to test. The reaper is this same binary, run
// again as a child that reads dirs on a pipe until the pipe closes, which
// happens when this process ends. A test that stops its servers in order
// leaves the reaper nothing to do.
func reapOnExit(dirs ...string) error {
	reaper.once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			reaper.err = err
			return
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), reaperMode+"=1")
		// Its stderr is the test binary's: go test then reports the
		// package once the reaper is done, and shows what it killed.
		cmd.Stderr = os.Stderr
		// Out of the test's process group, so that a Ctrl-C ends the test
		// binary and leaves the reaper to clean up after it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if reaper.w, err = cmd.StdinPipe(); err == nil {
			err = cmd.Start()
		}
		reaper.err = err
	})
	if reaper.err != nil {
		return fmt.Errorf("start the reaper of the test servers: %w", reaper.err)
	}
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	for _, dir := range dirs {
		if _, err := fmt.Fprintln(reaper.w, dir); err != nil {
			return fmt.Errorf("tell the reaper of %s: %w", dir, err)
		}
	}
	return nil
}

// tempDir makes a new temporary folder that the reaper removes, with any
// process that names it, should the test binary end without removing it.
func tempDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if err := reapOnExit(dir); err != nil {
		return "", errors.Join(err, os.RemoveAll(dir))
	}
	return dir, nil
}

// reap reads folders from r until it closes, then kills every process whose
// command line names one of them, waits for them to go, and removes the
// folders. It reports to w what it had to kill.
func reap(r io.Reader, w io.Writer) int {
	var dirs []string
	for s := bufio.NewScanner(r); s.Scan(); {
		if dir := s.Text(); filepath.IsAbs(dir) {
			dirs = append(dirs, dir)
		}
	}
	pids := processesNaming(dirs)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(pids) > 0 {
		fmt.Fprintf(w, "testenv: the test binary ended with its servers running: killed %v\n", pids)
	}
	// A killed process's command line empties as it exits; its files are
	// closed by then.
	for deadline := time.Now().Add(10 * time.Second); len(processesNaming(dirs)) > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	code := 0
	for _, dir := range dirs {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(w, "testenv: remove %s: %v\n", dir, err)
			code = 1
		}
	}
	return code
}

// processesNaming returns the processes other than this one whose command
// line holds one of dirs.
func processesNaming(dirs []string) []int {
	if len(dirs) == 0 {
		return nil
	}
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, path := range paths {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, dir := range dirs {
			// The folder itself or a file in it, not a longer name that
			// begins with it.
			if bytes.Contains(b, []byte(dir+"\x00")) || bytes.Contains(b, []byte(dir+"/")) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
