package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// TestLocal runs `profilekit local` as a process of its own (this test
// binary run as the profilekit binary, main and all), as a newcomer would:
// it prints a kubeconfig; a Profile created through that kubeconfig gets
// its namespace and shows on the page for its owner, and the page still
// wants the user's header; Ctrl-C (SIGINT to its process group, as a
// terminal sends it) stops it with exit code 0, with none of the processes
// it started left running and nothing left in its temporary folder.
func TestLocal(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	page := "127.0.0.1:" + freePort(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, asBinary+"=1", asBinary+"_ARGS=local --page-address "+page)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := &lineReader{}
	go out.read(stdout)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		// A failed test stops local as Ctrl-C does, so that it stops what
		// it started; killing it would leave kube-apiserver and etcd, in
		// process groups of their own, running.
		children := childProcesses(t, cmd.Process.Pid)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(45 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			for _, ch := range children {
				_ = syscall.Kill(ch.pid, syscall.SIGKILL)
			}
			<-exited
		}
	})

	kubeconfig := out.await(t, exited, regexp.MustCompile(`(?m)^kubeconfig: (\S+)$`), &stderr)
	out.await(t, exited, regexp.MustCompile(`Ctrl-C stops everything`), &stderr)
	if !strings.HasPrefix(kubeconfig, tmp+string(filepath.Separator)) {
		t.Errorf("kubeconfig %s is not in the process's temporary folder %s", kubeconfig, tmp)
	}
	children := childProcesses(t, cmd.Process.Pid)
	for _, want := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if !slices.ContainsFunc(children, func(p proc) bool { return p.name == want }) {
			t.Errorf("no %s among the processes local started: %v", want, children)
		}
	}

	// A Profile created with the printed kubeconfig, as kubectl apply would.
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restCfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "newcomer"},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dana@example.org"}}}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatalf("create a Profile with the printed kubeconfig: %v", err)
	}
	waitFor(t, "namespace newcomer", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKey{Name: "newcomer"}, &corev1.Namespace{})
		return err == nil, fmt.Sprint(err)
	})
	var body string
	waitFor(t, "the page showing newcomer to dana", func() (bool, string) {
		code, b := fetch(t, "http://"+page+"/?ns=newcomer", "dana@example.org")
		body = b
		return code == http.StatusOK && strings.Contains(b, "dana@example.org") && strings.Contains(b, "Ready"), fmt.Sprintf("%d %s", code, b)
	})
	if !strings.Contains(body, `<option value="newcomer"`) {
		t.Errorf("the page's picker lacks newcomer:\n%s", body)
	}
	if code, _ := fetch(t, "http://"+page+"/?ns=newcomer", ""); code != http.StatusUnauthorized {
		t.Errorf("without the user's header the page answered %d, want %d: local without --as must not name a user", code, http.StatusUnauthorized)
	}
	if code, _ := fetch(t, "http://"+page+"/?ns=newcomer", "mallory@example.org"); code != http.StatusNotFound {
		t.Errorf("another user sees newcomer: %d, want %d", code, http.StatusNotFound)
	}

	// Ctrl-C.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
		stopped = true
	case <-time.After(45 * time.Second):
		t.Fatalf("local still runs 45s after SIGINT\nstdout:\n%s\nstderr:\n%s", out, &stderr)
	}
	if err != nil {
		t.Errorf("local after SIGINT: %v, want exit code 0\nstderr:\n%s", err, &stderr)
	}
	out.await(t, nil, regexp.MustCompile(`nothing left behind`), &stderr)
	for _, ch := range children {
		if running(ch) {
			t.Errorf("%s (pid %d) still runs after local stopped", ch.name, ch.pid)
		}
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left behind in the temporary folder: %s", e.Name())
	}
}

// lineReader collects a process's output and lets a test wait for a line.
type lineReader struct {
	mu    sync.Mutex
	lines []string
	done  bool
}

func (l *lineReader) read(r io.Reader) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, s.Text())
		l.mu.Unlock()
	}
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}

func (l *lineReader) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// await waits up to two minutes for a line that re matches and returns
// its first group; it fails at once when the process exits first (exited
// is nil once it has).
func (l *lineReader) await(t *testing.T, exited <-chan error, re *regexp.Regexp, stderr fmt.Stringer) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if m := re.FindStringSubmatch(line); m != nil {
				l.mu.Unlock()
				return m[len(m)-1]
			}
		}
		done := l.done
		l.mu.Unlock()
		select {
		case err := <-exited:
			t.Fatalf("local exited (%v) before printing %q\nstdout:\n%s\nstderr:\n%s", err, re, l, stderr)
		default:
		}
		if time.Now().After(deadline) || (exited == nil && done) {
			t.Fatalf("local did not print %q\nstdout:\n%s\nstderr:\n%s", re, l, stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// proc is a process: its id and its name (its program's file name).
type proc struct {
	pid  int
	name string
}

// childProcesses returns the processes whose parent is pid, from /proc.
func childProcesses(t *testing.T, pid int) []proc {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []proc
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if name, ppid, ok := stat(id); ok && ppid == pid {
			out = append(out, proc{pid: id, name: name})
		}
	}
	return out
}

// stat returns a process's name (the file name of its command line's
// first word; /proc/<pid>/stat cuts names at 15 bytes) and parent.
func stat(pid int) (string, int, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	s := string(data)
	end := strings.LastIndexByte(s, ')')
	fields := strings.Fields(s[end+1:])
	if end < 0 || len(fields) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return "", 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "", 0, false
	}
	argv0, _, _ := strings.Cut(string(cmdline), "\x00")
	return filepath.Base(argv0), ppid, true
}

// running reports whether p still runs: its pid names a process of its
// name (a pid used again by another process is not p).
func running(p proc) bool {
	name, _, ok := stat(p.pid)
	return ok && name == p.name
}

// fetch GETs url as user (no header when empty) and returns the status and
// body.
func fetch(t *testing.T, url, user string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("kubeflow-userid", user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond for up to 30 seconds; cond says what it saw.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within 30s; last saw:\n%s", what, saw)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freePort returns a port on the loopback address that nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}
