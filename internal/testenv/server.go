package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// StartTimeout bounds how long a test server (the control plane, Azurite,
// OPA, PostgreSQL) may take to serve. make test runs several test binaries
// side by side on a small machine, where a server that starts in a second
// alone can take most of a minute; a server that does not serve within it
// has failed, and says so with its output.
const StartTimeout = 2 * time.Minute

// toolsDir returns the folder make fills with the test servers:
// KUBEBUILDER_ASSETS when set, else bin/k8s/<AssetsVersion> in the source tree.
func toolsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(), "bin", "k8s", AssetsVersion)
}

// tool returns the path of a test server under toolsDir, or an error that
// says how to get it.
func tool(rel, what string) (string, error) {
	p := filepath.Join(toolsDir(), rel)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found at %s: run `make test` (or `make test-servers`), which installs it", what, p)
	}
	return p, nil
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// process is a test server that can be stopped and started again on the same
// port, so that tests can show what happens while it is away.
type process struct {
	name  string
	path  string
	args  []string
	env   []string
	ready func(ctx context.Context) error

	mu     sync.Mutex
	cmd    *exec.Cmd
	output *bytes.Buffer
	exited chan struct{}
}

// start runs the server and waits until ready says it serves.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return nil
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = lockedWriter(out), lockedWriter(out)
	// A test binary that dies (a timeout, a kill) takes the server with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	for {
		if err := p.ready(ctx); err == nil {
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it served: %s", p.name, out.String())
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("%s did not serve within %s: %s", p.name, StartTimeout, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	p.cmd, p.output, p.exited = cmd, out, exited
	return nil
}

// stop ends the server and waits for it to exit.
func (p *process) stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.cmd = nil
	return nil
}

type syncWriter struct {
	mu  sync.Mutex
	buf *bytes.Buffer
}

func (w *syncWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Keep the first lines only: enough to explain a failure.
	if w.buf.Len() < 64<<10 {
		w.buf.Write(b)
	}
	return len(b), nil
}

func lockedWriter(b *bytes.Buffer) *syncWriter { return &syncWriter{buf: b} }

// httpReady returns a readiness check that passes once url answers with a
// status below 500.
func httpReady(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			return errors.New(resp.Status)
		}
		return nil
	}
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
