package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// writeKubeconfig writes a kubeconfig for the test API server.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	return env.KubeconfigFile(t)
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpStatus(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		b.WriteString(s.Text())
		b.WriteByte('\n')
	}
	return resp.StatusCode, b.String()
}

// reconcileTotal sums controller_runtime_reconcile_total of a controller
// over its result labels, as the /metrics endpoint shows it.
func reconcileTotal(metrics, controller string) float64 {
	total := 0.0
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "controller_runtime_reconcile_total{") || !strings.Contains(line, `controller="`+controller+`"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			total += v
		}
	}
	return total
}

func TestRun(t *testing.T) {
	leaseID := "profilekit-test-" + rand.String(5)
	cfgPath := filepath.Join(t.TempDir(), "host.yaml")
	cfg := fmt.Sprintf(`
resyncPeriod: 1h
leaderElection: {id: %s, namespace: default}
plugins:
  quotas:
    enabled: all
    defaults:
      hard: {limits.cpu: "2"}
  # Listed by no Profile: its Runner's grants sources (a watched ConfigMap
  # and an OPA server that does not answer) run all the same, and must end
  # with the host.
  blobcsi:
    defaults:
      storage:
      - name: standard
        classification: unclassified
        account: devstoreaccount1
        credentials: {secretName: blob-account, secretNamespace: default}
        capacity: 1Ti
      grantSources:
      - name: watched
        instance: standard
        configMap: {namespace: default, name: grants-%[1]s}
      - name: polled
        instance: standard
        opa: {url: "http://127.0.0.1:9", path: storage/grants, interval: 1s}
`, leaseID)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	// The host as the chart deploys it, through the test's proxy.
	kubeconfig := deployedKubeconfig(t, underChartFile(t, env.Config, cfgPath))
	// Whatever run starts must end with it; the test's own client and
	// control plane run on.
	leaks := goleak.IgnoreCurrent()

	ctx, cancel := context.WithCancel(t.Context())
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runMain(ctx, "run", "--config", cfgPath, "--kubeconfig", kubeconfig,
			"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", probeAddr, "--log-level", "error")
		done <- result{code, out, errOut}
	}()
	stopped := false
	stop := func() result {
		cancel()
		select {
		case r := <-done:
			stopped = true
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("run did not stop within 30s of its context ending")
		}
		return result{}
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})

	t.Run("probes answer 200", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			testhost.Eventually(t, 20*time.Second, func() (bool, string) {
				code, body := httpStatus("http://" + probeAddr + path)
				return code == http.StatusOK, fmt.Sprintf("%s: %d %s", path, code, body)
			})
		}
	})

	t.Run("leader election lease appears", func(t *testing.T) {
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			var lease coordinationv1.Lease
			err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: leaseID}, &lease)
			if err != nil {
				return false, err.Error()
			}
			holder := ""
			if lease.Spec.HolderIdentity != nil {
				holder = *lease.Spec.HolderIdentity
			}
			return holder != "", "holder " + holder
		})
	})

	t.Run("reconciles and counts it in metrics", func(t *testing.T) {
		name := "run-" + rand.String(5)
		testhost.NewProfile(t, env.Client, name, nil)
		quotaIs := func(cpu string) {
			t.Helper()
			testhost.Eventually(t, 20*time.Second, func() (bool, string) {
				var rq corev1.ResourceQuota
				if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: quotas.DefaultName}, &rq); err != nil {
					return false, err.Error()
				}
				got := rq.Spec.Hard[corev1.ResourceLimitsCPU]
				return got.String() == cpu, "limits.cpu " + got.String()
			})
		}
		quotaIs("2")

		var before float64
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			code, body := httpStatus("http://" + metricsAddr + "/metrics")
			before = reconcileTotal(body, "profilekit-quotas")
			return code == http.StatusOK && before > 0, fmt.Sprintf("status %d, reconciles %v", code, before)
		})

		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(p.DeepCopy())
		p.Labels = map[string]string{"quotas.profilekit.dev/limits.cpu": "3"}
		if err := env.Client.Patch(t.Context(), &p, patch); err != nil {
			t.Fatal(err)
		}
		quotaIs("3")
		var body string
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			_, body = httpStatus("http://" + metricsAddr + "/metrics")
			after := reconcileTotal(body, "profilekit-quotas")
			return after > before, fmt.Sprintf("controller_runtime_reconcile_total{controller=\"profilekit-quotas\"} %v, was %v", after, before)
		})
		// profilekit's own counters are served too.
		for _, series := range []string{`profilekit_plugin_objects_total{action="created",plugin="quotas"}`, `profilekit_plugin_objects_total{action="configured",plugin="quotas"}`} {
			if !strings.Contains(body, series) {
				t.Errorf("/metrics lacks %s", series)
			}
		}
	})

	r := stop()
	if r.code != 0 {
		t.Errorf("run exited %d after its context ended, want 0; stderr:\n%s", r.code, r.stderr)
	}
	// Idle keep-alive connections of the test's own clients may close late;
	// and a metadata-only informer's watch.Filter goroutine can be left
	// blocked on a send when its reflector stops (a known leak of
	// apimachinery's watch.Filter, kubernetes/kubernetes#113254). Nothing
	// else may be left.
	// The test's proxy serves run's connections until they close.
	if err := goleak.Find(leaks, goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop")); err != nil {
		t.Errorf("goroutines left after run returned: %v", err)
	}
}

func TestRunRefusesInvalidConfig(t *testing.T) {
	const file = "testdata/invalid-host.yaml"
	want := []string{
		file + ": plugins.quotas.defaults: plugin quotas: host defaults: caps[limits.cpu]=-1 is negative",
		file + ": plugins.quotas.selector: only narrows enabled: all, and enabled is listed",
		file + ": leaderElection.idd: unknown field",
	}
	check := func(t *testing.T, code int, stderr string) {
		t.Helper()
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("stderr does not contain %q:\n%s", w, stderr)
			}
		}
	}
	t.Run("in process", func(t *testing.T) {
		// No --kubeconfig: the configuration is checked before any cluster
		// is looked for.
		code, _, stderr := runMain(t.Context(), "run", "--config", file)
		check(t, code, stderr)
	})
	t.Run("through main", func(t *testing.T) {
		code, _, stderr := execMain(t, "run", "--config", file)
		check(t, code, stderr)
	})
	t.Run("missing file", func(t *testing.T) {
		code, _, stderr := runMain(t.Context(), "run", "--config", "testdata/nope.yaml")
		if code != 1 || !strings.Contains(stderr, "testdata/nope.yaml") {
			t.Errorf("exit %d, stderr:\n%s", code, stderr)
		}
	})
	t.Run("no config", func(t *testing.T) {
		code, _, stderr := runMain(t.Context(), "run")
		if code != 1 || !strings.Contains(stderr, "--config is required") {
			t.Errorf("exit %d, stderr:\n%s", code, stderr)
		}
	})
}

func TestRunRefusesUnservedKinds(t *testing.T) {
	// The test API server has the Profile CRD only: no PodDefault.
	cfgPath := filepath.Join(t.TempDir(), "host.yaml")
	cfg := "leaderElection: {namespace: default}\nplugins:\n  notebook: {enabled: all}\n  quotas: {enabled: all}\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	code, _, stderr := runMain(ctx, "run", "--config", cfgPath, "--kubeconfig", writeKubeconfig(t),
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	want := "plugin notebook: the cluster does not serve kubeflow.org/v1alpha1, Kind=PodDefault: install its CRD, or set plugins.notebook.enabled: off"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want 1 and %q; stderr:\n%s", code, want, stderr)
	}
}

func TestRunNeedsLeaseNamespaceOutsideACluster(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(cfgPath, []byte("plugins: {quotas: {enabled: all}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runMain(t.Context(), "run", "--config", cfgPath, "--kubeconfig", writeKubeconfig(t))
	if code != 1 || !strings.Contains(stderr, cfgPath+": leaderElection.namespace: empty") {
		t.Errorf("exit %d; stderr:\n%s", code, stderr)
	}
}
