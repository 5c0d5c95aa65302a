package main

// This file holds what the fault tests share: the host configuration they
// run, hosts that can be stopped, a log of their requests, and the checks
// that a set of Profiles has converged. The tests stand in fault_*_test.go.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
)

// shardLabel puts a test's Profiles in a shard of their own, so that the
// hosts of one test never see the Profiles of another.
const shardLabel = "fault.profilekit.dev/shard"

// monitoringLabel turns on the gated network policy of faultConfig.
const monitoringLabel = "profilekit.dev/allow-monitoring"

// faultConditions are the conditions every Profile gets under faultConfig.
var faultConditions = []string{"QuotasReady", "LimitRangeReady", "NetworkReady"}

// faultConfig is a host configuration with three plugins, one of them
// enabled only for the Profiles that list it and one with a gated policy,
// restricted to the shard and holding the given Lease.
func faultConfig(t *testing.T, shard, leaseID string, qps float32) (*hostconfig.Config, *plugins.Registry) {
	t.Helper()
	reg, err := plugins.NewRegistry(builtin.Definitions()...)
	if err != nil {
		t.Fatal(err)
	}
	data := fmt.Sprintf(`
resyncPeriod: 1h
client: {qps: %g, burst: %d}
shardSelector: {matchLabels: {%s: %s}}
leaderElection: {id: %s, namespace: default}
plugins:
  quotas:
    enabled: all
    defaults:
      hard: {limits.cpu: "2"}
  limitrange:
    enabled: listed
    defaults:
      container:
        default: {cpu: 500m, memory: 1Gi}
  network:
    enabled: all
    defaults:
      policies:
      - name: default-deny
        podSelector: {}
        policyTypes: [Ingress, Egress]
      - name: allow-monitoring
        gate: {label: %s}
        podSelector: {}
        policyTypes: [Ingress]
        ingress:
        - from:
          - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
`, qps, int(qps), shardLabel, shard, leaseID, monitoringLabel)
	cfg, err := hostconfig.Parse("fault.yaml", []byte(data), reg)
	if err != nil {
		t.Fatalf("host configuration: %v", err)
	}
	return cfg, reg
}

// requestLog records every request a host sends, as "VERB /path". Unlike
// testenv.Counter it keeps reads at hand too: the shard test checks that a
// host does not even read another shard's namespaces.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
	// cut makes every new request fail before it leaves the process, as if
	// the host had lost the network. Streams already open go on.
	cut atomic.Bool
}

func (l *requestLog) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if l.cut.Load() {
				return nil, errors.New("network cut by the test")
			}
			l.mu.Lock()
			l.reqs = append(l.reqs, r.Method+" "+r.URL.Path)
			l.mu.Unlock()
			return rt.RoundTrip(r)
		})
	})
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// writes returns the mutating requests, leaving out the Lease's.
func (l *requestLog) writes() []string {
	var out []string
	for _, r := range l.all() {
		verb, path, _ := strings.Cut(r, " ")
		if verb == http.MethodGet || strings.Contains(path, "/leases") {
			continue
		}
		out = append(out, r)
	}
	return out
}

// faultHost is a host manager from server.NewManager running in the test.
type faultHost struct {
	name string
	log  *requestLog
	// cache is the manager's cache, to see what the host holds.
	cache cache.Cache
	// rbac records the host's requests under the chart's RBAC.
	rbac   *deploymentUse
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startHost runs a manager for cfg until stop or the end of the test, on
// the cluster the administrator's restCfg reaches, under the RBAC the chart
// renders for cfg (with helmArgs).
func startHost(t *testing.T, name string, restCfg *rest.Config, cfg *hostconfig.Config, reg *plugins.Registry, leaderElection bool, helmArgs ...string) *faultHost {
	t.Helper()
	h := &faultHost{name: name, log: &requestLog{}, done: make(chan error, 1)}
	rc, use := asDeployedUse(t, restCfg, chartFor(t, cfg, helmArgs...), true)
	h.rbac = use
	mgr, err := server.NewManager(h.log.wrap(rc), cfg, reg, server.Options{
		MetricsAddr:        "0",
		ProbeAddr:          "0",
		LeaderElection:     leaderElection,
		Logger:             logr.Discard(),
		SkipNameValidation: true,
	})
	if err != nil {
		t.Fatalf("host %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background()) //nolint:forbidigo // the host serves the cleanups, which run after t.Context is canceled
	h.cancel, h.cache = cancel, mgr.GetCache()
	go func() { h.done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Errorf("host %s: %v", name, err)
		}
	})
	return h
}

// stopped waits until the host's manager returns by itself and returns its
// error.
func (h *faultHost) stopped(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-h.done:
		h.once.Do(func() { h.cancel(); h.err = nil })
		return err
	case <-time.After(timeout):
		t.Fatalf("host %s still runs %s later", h.name, timeout)
	}
	return nil
}

// stop ends the host and returns what its manager returned.
func (h *faultHost) stop() error {
	h.once.Do(func() {
		h.cancel()
		select {
		case h.err = <-h.done:
		case <-time.After(30 * time.Second):
			h.err = errors.New("did not stop within 30s")
		}
	})
	return h.err
}

// running fails the test when the host's manager has returned.
func (h *faultHost) running(t *testing.T) {
	t.Helper()
	select {
	case err := <-h.done:
		h.done <- err
		t.Fatalf("host %s stopped by itself: %v", h.name, err)
	default:
	}
}

// faultProfile creates a Profile in the shard that lists limitrange, with the
// monitoring gate on when monitored.
func faultProfile(t *testing.T, c client.Client, name, shard string, monitored bool) {
	t.Helper()
	labels := map[string]string{shardLabel: shard}
	if monitored {
		labels[monitoringLabel] = "true"
	}
	testhost.NewProfile(t, c, name, labels, kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: limitrange.Kind}})
}

// TestFaultHostStoppedWhileConverging stops a host part-way through its first
// pass over 50 Profiles and starts a new one: the second finishes the work,
// and what exists afterwards is exactly the desired set, owned by the live
// Profiles, with one True condition per plugin.
func TestFaultHostStoppedWhileConverging(t *testing.T) {
	t.Parallel()
	const n = 50
	shard := "restart-" + rand.String(5)
	prefix := "fault-" + shard + "-"
	profiles := map[string]bool{}
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s%02d", prefix, i)
		profiles[name] = i%2 == 0
		names = append(names, name)
	}
	want := wantObjects(profiles)

	// A low client rate keeps the first host's pass long enough to be cut.
	slow, reg := faultConfig(t, shard, "fault-restart-"+rand.String(5), 5)
	first := startHost(t, "first", env.Config, slow, reg, false)
	for _, name := range names {
		faultProfile(t, env.Client, name, shard, profiles[name])
	}
	var atStop []string
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		atStop = ownedObjects(t, env.Client, prefix)
		return len(atStop) >= 20, fmt.Sprintf("%d of %d objects written by the first host", len(atStop), len(want))
	})
	if err := first.stop(); err != nil {
		t.Fatalf("first host: %v", err)
	}
	atStop = ownedObjects(t, env.Client, prefix)
	if len(atStop) >= len(want) {
		t.Fatalf("the first host wrote all %d objects before it was stopped; the interruption was not tested", len(want))
	}
	if ok, _ := converged(t.Context(), env.Client, names, faultConditions); ok {
		t.Fatal("every Profile was converged before the first host stopped; the interruption was not tested")
	}
	t.Logf("first host stopped with %d of %d objects written", len(atStop), len(want))
	if d := diffSets(want, atStop); strings.Contains(d, "unexpected") || strings.Contains(d, "duplicates") {
		t.Errorf("after the interrupted pass:%s", d)
	}

	fast, reg := faultConfig(t, shard, "fault-restart-"+rand.String(5), 200)
	start := time.Now()
	startHost(t, "second", env.Config, fast, reg, false)
	waitConverged(t, env.Client, 30*time.Second, names...)
	t.Logf("second host converged %d Profiles in %s", n, time.Since(start).Round(time.Millisecond))
	if d := diffSets(want, ownedObjects(t, env.Client, prefix)); d != "" {
		t.Errorf("owned objects after the second host converged:%s", d)
	}
}
