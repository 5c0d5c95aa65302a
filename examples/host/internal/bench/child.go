package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/plugins"
)

// child is the host running alone as `profilekit run` in a child process,
// against a kubeconfig for the local control plane, so that its memory is
// the host's and nothing else's.
type child struct {
	cmd     *exec.Cmd
	metrics string
	heap    string
	logPath string
	done    chan error
	stopped sync.Once
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startChild writes the host configuration and a kubeconfig to dir and
// starts the host binary's run command with them, leader election off.
func (b *bench) startChild(ctx context.Context, dir string) (*child, error) {
	cfg, err := yaml.Marshal(b.cfg)
	if err != nil {
		return nil, fmt.Errorf("encode the host configuration: %w", err)
	}
	cfgPath, kcPath, logPath := filepath.Join(dir, "host.yaml"), filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "host.log")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return nil, fmt.Errorf("write the host configuration: %w", err)
	}
	if err := os.WriteFile(kcPath, b.kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("write the kubeconfig: %w", err)
	}
	metricsAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	pprofAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("host log: %w", err)
	}
	cmd := exec.CommandContext(ctx, b.HostBinary, "run", "--config", cfgPath, "--kubeconfig", kcPath,
		"--leader-elect=false", "--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0",
		"--pprof-bind-address", pprofAddr, "--log-level", "error")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start the host process: %w", err)
	}
	c := &child{
		cmd: cmd, metrics: "http://" + metricsAddr + "/metrics", logPath: logPath, done: make(chan error, 1),
		// gc=1 collects garbage before the profile is taken; debug=1
		// writes it as text that ends with the runtime's memory statistics.
		heap: "http://" + pprofAddr + "/debug/pprof/heap?gc=1&debug=1",
	}
	go func() {
		c.done <- cmd.Wait()
		logFile.Close()
	}()
	return c, nil
}

// stop ends the host process with SIGTERM, as a pod's would end, and waits.
func (c *child) stop() {
	if c.cmd.Process == nil {
		return
	}
	c.stopped.Do(func() {
		_ = c.cmd.Process.Signal(os.Interrupt)
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
}

// scrape reads the host process's /metrics.
func (c *child) scrape(ctx context.Context) ([]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("host /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("parse host /metrics: %w", err)
	}
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, f := range fams {
		out = append(out, f)
	}
	return out, nil
}

// waitPass waits until every controller of the host process has reconciled
// every Profile and has nothing queued.
func (b *bench) waitPass(ctx context.Context, c *child) error {
	deadline := time.Now().Add(b.Timeout)
	quiet := 0
	for quiet < 5 {
		select {
		case err := <-c.done:
			return fmt.Errorf("the host process ended (log: %s): %w", c.logPath, errors.Join(err, errors.New("exited")))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the host process did not reconcile every Profile within %s (log: %s)", b.Timeout, c.logPath)
		}
		fams, err := c.scrape(ctx)
		if err != nil {
			// Not listening yet.
			quiet = 0
			continue
		}
		total := byController(fams, reconcileTotal, true)
		depth := byController(fams, queueDepth, false)
		active := byController(fams, activeWorkers, false)
		done := true
		for _, def := range b.defs {
			name := plugins.FieldManagerFor(def.Kind())
			if total[name] < b.Profiles || depth[name] > 0 || active[name] > 0 {
				done = false
			}
		}
		if done {
			quiet++
		} else {
			quiet = 0
		}
	}
	return nil
}

// read returns the host process's RSS (from /proc) and its heap in use
// right after a garbage collection, which the process runs when asked for a
// heap profile through its pprof endpoint.
func (c *child) read(ctx context.Context) (memReading, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.heap, nil)
	if err != nil {
		return memReading{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return memReading{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return memReading{}, fmt.Errorf("host heap profile: %s", resp.Status)
	}
	stats, err := memStats(resp.Body, "HeapInuse", "HeapAlloc")
	if err != nil {
		return memReading{}, err
	}
	rss, err := statusRSS(filepath.Join("/proc", strconv.Itoa(c.cmd.Process.Pid), "status"))
	if err != nil {
		return memReading{}, err
	}
	return memReading{heap: stats[0], alloc: stats[1], rss: rss}, nil
}

// saveHeapProfile writes the host process's heap profile, taken after a
// garbage collection, to path.
func (c *child) saveHeapProfile(ctx context.Context, path string) error {
	url := strings.Replace(c.heap, "debug=1", "debug=0", 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("host heap profile: %s", resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("host heap profile: %w", err)
	}
	return os.WriteFile(path, data, 0o644)
}

// memStats returns the values of "# Name = value" lines of a text heap
// profile's memory statistics, in the order of names.
func memStats(r io.Reader, names ...string) ([]uint64, error) {
	out := make([]uint64, len(names))
	found := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		for i, name := range names {
			v, ok := strings.CutPrefix(sc.Text(), "# "+name+" = ")
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("host heap profile: %s: %w", name, err)
			}
			out[i] = n
			found++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("host heap profile: %w", err)
	}
	if found != len(names) {
		return nil, fmt.Errorf("host heap profile lacks some of %v", names)
	}
	return out, nil
}

// tail returns the end of the host process's log, for errors.
func (c *child) tail() string {
	data, err := os.ReadFile(c.logPath)
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}
