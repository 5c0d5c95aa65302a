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
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
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
	name   string
	log    *requestLog
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startHost runs a manager for cfg against restCfg until stop or the end of
// the test.
func startHost(t *testing.T, name string, restCfg *rest.Config, cfg *hostconfig.Config, reg *plugins.Registry, leaderElection bool) *faultHost {
	t.Helper()
	h := &faultHost{name: name, log: &requestLog{}, done: make(chan error, 1)}
	mgr, err := server.NewManager(h.log.wrap(restCfg), cfg, reg, server.Options{
		MetricsAddr:        "0",
		ProbeAddr:          "0",
		LeaderElection:     leaderElection,
		Logger:             logr.Discard(),
		SkipNameValidation: true,
	})
	if err != nil {
		t.Fatalf("host %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
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

// wantObjects is the set ownedObjects should return for the Profiles.
func wantObjects(profiles map[string]bool) []string {
	var out []string
	for name, monitored := range profiles {
		out = append(out,
			ownedKey("ResourceQuota", name, quotas.DefaultName, quotas.Kind, name, "ok"),
			ownedKey("LimitRange", name, limitrange.DefaultName, limitrange.Kind, name, "ok"),
			ownedKey("NetworkPolicy", name, "default-deny", "network", name, "ok"))
		if monitored {
			out = append(out, ownedKey("NetworkPolicy", name, "allow-monitoring", "network", name, "ok"))
		}
	}
	slices.Sort(out)
	return out
}

func ownedKey(kind, ns, name, plugin, profile, owner string) string {
	return fmt.Sprintf("%s %s/%s plugin=%s profile=%s owner=%s", kind, ns, name, plugin, profile, owner)
}

// ownedObjects lists, in every namespace, the objects profilekit labels as
// belonging to a Profile whose name starts with prefix, with whether their
// owner reference points at the live Profile ("ok") or not.
func ownedObjects(t *testing.T, c client.Client, prefix string) []string {
	t.Helper()
	ctx := t.Context()
	var profiles kubeflowv1.ProfileList
	if err := c.List(ctx, &profiles); err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, p := range profiles.Items {
		uids[p.Name] = string(p.UID)
	}
	var objs []client.Object
	var rqs corev1.ResourceQuotaList
	var lrs corev1.LimitRangeList
	var nps networkingv1.NetworkPolicyList
	sel := client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue}
	for _, l := range []client.ObjectList{&rqs, &lrs, &nps} {
		if err := c.List(ctx, l, sel); err != nil {
			t.Fatal(err)
		}
	}
	for i := range rqs.Items {
		objs = append(objs, &rqs.Items[i])
	}
	for i := range lrs.Items {
		objs = append(objs, &lrs.Items[i])
	}
	for i := range nps.Items {
		objs = append(objs, &nps.Items[i])
	}
	var out []string
	for _, o := range objs {
		profile := o.GetLabels()[plugins.LabelProfile]
		if !strings.HasPrefix(profile, prefix) {
			continue
		}
		owner := "none"
		for _, ref := range o.GetOwnerReferences() {
			switch {
			case ref.Kind != "Profile" || ref.Name != profile:
				owner = "foreign:" + ref.Kind + "/" + ref.Name
			case string(ref.UID) != uids[profile]:
				owner = "stale-uid"
			case ref.Controller != nil && *ref.Controller:
				owner = "ok"
			}
		}
		var kind string
		switch o.(type) {
		case *corev1.ResourceQuota:
			kind = "ResourceQuota"
		case *corev1.LimitRange:
			kind = "LimitRange"
		case *networkingv1.NetworkPolicy:
			kind = "NetworkPolicy"
		}
		out = append(out, ownedKey(kind, o.GetNamespace(), o.GetName(), o.GetLabels()[plugins.LabelPlugin], profile, owner))
	}
	slices.Sort(out)
	return out
}

// converged reports whether every named Profile has each condition exactly
// once, all True, and says what is missing otherwise.
func converged(ctx context.Context, c client.Client, names []string, conds []string) (bool, string) {
	var missing []string
	for _, name := range names {
		var p kubeflowv1.Profile
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			return false, err.Error()
		}
		for _, ct := range conds {
			n := 0
			for _, got := range p.Status.Conditions {
				if got.Type != ct {
					continue
				}
				n++
				if got.Status != plugins.ConditionTrue {
					missing = append(missing, fmt.Sprintf("%s %s=%s %q", name, ct, got.Status, got.Message))
				}
			}
			if n != 1 {
				missing = append(missing, fmt.Sprintf("%s has %d %s conditions", name, n, ct))
			}
		}
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("%d problems, first: %s", len(missing), strings.Join(missing[:min(3, len(missing))], "; "))
	}
	return true, ""
}

func waitConverged(t *testing.T, c client.Client, timeout time.Duration, names ...string) {
	t.Helper()
	testhost.Eventually(t, timeout, func() (bool, string) { return converged(t.Context(), c, names, faultConditions) })
}

func diffSets(want, got []string) string {
	var b strings.Builder
	for _, w := range want {
		if !slices.Contains(got, w) {
			fmt.Fprintf(&b, "\n  missing: %s", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			fmt.Fprintf(&b, "\n  unexpected: %s", g)
		}
	}
	if len(got) != len(slices.Compact(slices.Clone(got))) {
		fmt.Fprintf(&b, "\n  duplicates in %v", got)
	}
	return b.String()
}

// TestFaultHostStoppedWhileConverging stops a host part-way through its first
// pass over 50 Profiles and starts a new one: the second finishes the work,
// and what exists afterwards is exactly the desired set, owned by the live
// Profiles, with one True condition per plugin.
func TestFaultHostStoppedWhileConverging(t *testing.T) {
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
