package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testhost"
)

// A graceful stop (SIGTERM, SIGINT: the end of run's context) logs nothing
// at error level, however the manager's goroutines end: the Lease is
// released and the end of the leader election is an info line. The stop
// is raced several times over, as the manager's own order of shutdown
// varies from one stop to the next.
func TestGracefulStopLogsNoError(t *testing.T) {
	const stops = 4
	for i := range stops {
		leaseID := "profilekit-stop-" + rand.String(5)
		cfgPath := filepath.Join(t.TempDir(), "host.yaml")
		cfg := fmt.Sprintf(`
resyncPeriod: 1h
leaderElection: {id: %s, namespace: default}
plugins:
  quotas:
    enabled: all
    defaults:
      hard: {limits.cpu: "2"}
`, leaseID)
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		// The binary itself, in a process of its own: SIGTERM as
		// Kubernetes sends it, through hostapp.Run.
		cmd := exec.Command(os.Args[0]) //nolint:gosec // the test binary, as the profilekit binary
		cmd.Env = append(os.Environ(), asBinary+"=1", asBinary+"_ARGS="+strings.Join([]string{
			"run", "--config", cfgPath, "--kubeconfig", deployedKubeconfig(t, underChartFile(t, env.Config, cfgPath)),
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-level", "info", "--log-format", "json",
		}, " "))
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		holder := ""
		testhost.Eventually(t, 30*time.Second, func() (bool, string) {
			var lease coordinationv1.Lease
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: leaseID}, &lease); err != nil {
				return false, err.Error() + "\n" + stderr.String()
			}
			if lease.Spec.HolderIdentity != nil {
				holder = *lease.Spec.HolderIdentity
			}
			return holder != "", "no holder yet"
		})
		// Half the stops come at once, before the controllers' caches
		// have synced; the others once the host serves.
		if i%2 == 1 {
			time.Sleep(2 * time.Second)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		var r struct {
			code   int
			stderr string
		}
		select {
		case err := <-exited:
			r.code = cmd.ProcessState.ExitCode()
			if err != nil && r.code == 0 {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("stop %d: run did not stop within 30s of SIGTERM", i)
		}
		r.stderr = stderr.String()
		sawEnd := false
		for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
			var entry struct {
				Level string `json:"level"`
				Msg   string `json:"msg"`
			}
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Errorf("stop %d: a log line that is not JSON: %q", i, line)
				continue
			}
			if entry.Level == "error" {
				t.Errorf("stop %d: error logged on a graceful stop: %s", i, line)
			}
			sawEnd = sawEnd || strings.Contains(entry.Msg, "leader election ended with the stop")
		}
		// The Lease is released: no holder, so that the next replica
		// takes over at once rather than after the lease duration.
		var lease coordinationv1.Lease
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: leaseID}, &lease); err != nil {
			t.Fatal(err)
		}
		if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
			t.Errorf("stop %d: Lease still held by %s after the stop", i, *h)
		}
		t.Logf("stop %d: exit %d, the end of the leader election logged at info: %t", i, r.code, sawEnd)
	}
}

// TestStopAsTheLeaseIsTakenReleasesIt: a stop that comes while the request
// that takes the Lease is under way (it reached the API server, its answer
// had not come back) leaves the Lease to no one. The leader election alone
// does not know it took the Lease and would leave it held by the stopped
// replica for the lease duration.
func TestStopAsTheLeaseIsTakenReleasesIt(t *testing.T) {
	leaseID := "profilekit-taken-" + rand.String(5)
	cfgPath := filepath.Join(t.TempDir(), "host.yaml")
	cfg := fmt.Sprintf(`
resyncPeriod: 1h
leaderElection: {id: %s, namespace: default}
plugins:
  quotas:
    enabled: all
    defaults:
      hard: {limits.cpu: "2"}
`, leaseID)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	hostCfg, reg := loadHostConfig(t, cfgPath)
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	defer cancel()
	// The answer to the request that creates the Lease comes back only
	// after the stop: the replica is told its request was cancelled.
	rc := rest.CopyConfig(underChartFile(t, env.Config, cfgPath))
	leases := "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	var created atomic.Bool
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodPost || r.URL.Path != leases {
				return rt.RoundTrip(r)
			}
			resp, err := rt.RoundTrip(r.WithContext(context.WithoutCancel(r.Context())))
			if err == nil && resp.StatusCode == http.StatusCreated {
				created.Store(true)
				cancel()
				<-r.Context().Done()
				_ = resp.Body.Close()
				return nil, r.Context().Err()
			}
			return resp, err
		})
	})
	mgr, err := server.NewManager(rc, hostCfg, reg, server.Options{
		MetricsAddr: "0", ProbeAddr: "0", LeaderElection: true, Logger: testr.New(t), SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the host's stop returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the host did not stop within 30s")
	}
	if !created.Load() {
		t.Fatal("the host stopped before it created the Lease")
	}
	var lease coordinationv1.Lease
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: leaseID}, &lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the Lease is still held by %s, the replica stopped as it took it", *h)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
