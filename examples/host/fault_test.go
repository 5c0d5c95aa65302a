package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
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
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testenv"
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
	reg, err := plugins.NewRegistry(definitions()...)
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

// TestFaultLeaderElection runs two hosts for one Lease: only the leader
// writes, and when it stops the other takes over and serves a new Profile.
func TestFaultLeaderElection(t *testing.T) {
	shard := "leader-" + rand.String(5)
	prefix := "fault-" + shard + "-"
	cfg, reg := faultConfig(t, shard, "fault-leader-"+rand.String(5), 100)

	leader := startHost(t, "leader", env.Config, cfg, reg, true)
	before := prefix + "a"
	faultProfile(t, env.Client, before, shard, true)
	// Only a leader reconciles, so a converged Profile means it holds the Lease.
	waitConverged(t, env.Client, 30*time.Second, before)
	follower := startHost(t, "follower", env.Config, cfg, reg, true)

	second := prefix + "b"
	faultProfile(t, env.Client, second, shard, false)
	waitConverged(t, env.Client, 20*time.Second, second)
	// The follower has watched the Profiles for a while; give it time to
	// misbehave, then look at what it sent.
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return slices.ContainsFunc(follower.log.all(), func(r string) bool { return strings.Contains(r, "/leases/") }),
			"the follower has not asked for the Lease yet"
	})
	time.Sleep(2 * time.Second)
	if w := follower.log.writes(); len(w) != 0 {
		t.Errorf("the follower wrote while the leader held the Lease:\n%s", strings.Join(w, "\n"))
	}
	if w := leader.log.writes(); !slices.ContainsFunc(w, func(r string) bool { return strings.Contains(r, "/namespaces/"+second+"/") }) {
		t.Errorf("the leader sent no write for %s:\n%s", second, strings.Join(w, "\n"))
	}

	stopped := time.Now()
	if err := leader.stop(); err != nil {
		t.Fatalf("leader: %v", err)
	}
	third := prefix + "c"
	faultProfile(t, env.Client, third, shard, true)
	waitConverged(t, env.Client, 30*time.Second, third)
	t.Logf("the follower converged %s %s after the leader stopped", third, time.Since(stopped).Round(time.Millisecond))
	follower.running(t)
	if w := follower.log.writes(); !slices.ContainsFunc(w, func(r string) bool { return strings.Contains(r, "/namespaces/"+third+"/") }) {
		t.Errorf("the new leader sent no write for %s:\n%s", third, strings.Join(w, "\n"))
	}
	if d := diffSets(wantObjects(map[string]bool{before: true, second: false, third: true}), ownedObjects(t, env.Client, prefix)); d != "" {
		t.Errorf("owned objects:%s", d)
	}
}

// TestFaultLeaderLost cuts the leader off the API server without letting it
// release the Lease, as a crash or a partition would: it stops on its own
// once it cannot renew the Lease, and the follower takes over when the Lease
// expires and serves the Profile created meanwhile. It takes the Lease's
// default 15s to expire.
func TestFaultLeaderLost(t *testing.T) {
	shard := "lost-" + rand.String(5)
	prefix := "fault-" + shard + "-"
	cfg, reg := faultConfig(t, shard, "fault-lost-"+rand.String(5), 100)

	leader := startHost(t, "leader", env.Config, cfg, reg, true)
	first := prefix + "a"
	faultProfile(t, env.Client, first, shard, false)
	waitConverged(t, env.Client, 30*time.Second, first)
	follower := startHost(t, "follower", env.Config, cfg, reg, true)
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return slices.ContainsFunc(follower.log.all(), func(r string) bool { return strings.Contains(r, "/leases/") }),
			"the follower has not asked for the Lease yet"
	})

	cut := time.Now()
	leader.log.cut.Store(true)
	second := prefix + "b"
	faultProfile(t, env.Client, second, shard, true)
	waitConverged(t, env.Client, 40*time.Second, second)
	t.Logf("the follower converged %s %s after the leader was cut off", second, time.Since(cut).Round(time.Millisecond))

	if err := leader.stopped(t, 5*time.Second); err == nil || !strings.Contains(err.Error(), "leader election lost") {
		t.Errorf("the cut-off leader returned %v, want leader election lost", err)
	}
	follower.running(t)
	if w := follower.log.writes(); !slices.ContainsFunc(w, func(r string) bool { return strings.Contains(r, "/namespaces/"+second+"/") }) {
		t.Errorf("the new leader sent no write for %s:\n%s", second, strings.Join(w, "\n"))
	}
	if d := diffSets(wantObjects(map[string]bool{first: false, second: true}), ownedObjects(t, env.Client, prefix)); d != "" {
		t.Errorf("owned objects:%s", d)
	}
}

// requestScope returns the namespace a request path is in, or the Profile it
// names, or "" for cluster-wide requests (lists and watches).
func requestScope(path string) (namespace, profile string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		switch parts[i] {
		case "namespaces":
			return parts[i+1], ""
		case "profiles":
			return "", parts[i+1]
		}
	}
	return "", ""
}

// TestFaultDisjointShards runs two hosts with disjoint shard selectors: each
// serves its own Profiles only and sends no request about the others.
func TestFaultDisjointShards(t *testing.T) {
	id := rand.String(5)
	shards := map[string][]string{}
	hosts := map[string]*faultHost{}
	for _, s := range []string{"a", "b"} {
		shard := "shard-" + s + "-" + id
		cfg, reg := faultConfig(t, shard, "fault-shard-"+s+"-"+id, 100)
		hosts[s] = startHost(t, "shard "+s, env.Config, cfg, reg, true)
		for i := range 3 {
			name := fmt.Sprintf("fault-%s-%d", shard, i)
			faultProfile(t, env.Client, name, shard, i == 0)
			shards[s] = append(shards[s], name)
		}
	}
	// A Profile in neither shard is served by neither host.
	outside := "fault-shard-none-" + id
	faultProfile(t, env.Client, outside, "none-"+id, true)

	waitConverged(t, env.Client, 30*time.Second, slices.Concat(shards["a"], shards["b"])...)
	for s, h := range hosts {
		own := shards[s]
		for _, r := range h.log.all() {
			_, path, _ := strings.Cut(r, " ")
			ns, profile := requestScope(path)
			switch {
			case ns == "default" || (ns == "" && profile == ""):
				// The Lease, Events on the cluster-scoped Profiles, and
				// cluster-wide lists and watches.
			case ns != "" && !slices.Contains(own, ns):
				t.Errorf("host %s sent %s, outside its Profiles' namespaces %v", s, r, own)
			case profile != "" && !slices.Contains(own, profile):
				t.Errorf("host %s sent %s about a Profile outside its shard", s, r)
			}
		}
		if !slices.ContainsFunc(h.log.writes(), func(r string) bool { return strings.Contains(r, "/namespaces/"+own[0]+"/") }) {
			t.Errorf("host %s sent no write for its Profile %s", s, own[0])
		}
	}
	var p kubeflowv1.Profile
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: outside}, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Status.Conditions) != 0 {
		t.Errorf("Profile %s is in neither shard but has conditions %v", outside, p.Status.Conditions)
	}
	if got := ownedObjects(t, env.Client, outside); len(got) != 0 {
		t.Errorf("Profile %s is in neither shard but has objects:\n%s", outside, strings.Join(got, "\n"))
	}
	if d := diffSets(wantObjects(map[string]bool{shards["a"][0]: true, shards["a"][1]: false, shards["a"][2]: false}), ownedObjects(t, env.Client, "fault-shard-a-"+id)); d != "" {
		t.Errorf("shard a:%s", d)
	}
	if d := diffSets(wantObjects(map[string]bool{shards["b"][0]: true, shards["b"][1]: false, shards["b"][2]: false}), ownedObjects(t, env.Client, "fault-shard-b-"+id)); d != "" {
		t.Errorf("shard b:%s", d)
	}
}

// startRestartableControlPlane starts a control plane of its own, whose API
// server can be stopped and started again on the same address with the same
// serving certificate, so that clients made before a restart still reach it.
func startRestartableControlPlane(t *testing.T) (*envtest.Environment, *rest.Config) {
	t.Helper()
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	s, err := testenv.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	cp := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(testenv.RepoRoot(), "api", "kubeflow", "crd")},
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
	}
	// envtest keeps the secure port it picked on the first start, but it
	// puts the serving certificate in a temporary folder that Stop deletes,
	// and a restart would make a new CA. A folder of the test's keeps the
	// certificate, and the client's CA stays valid.
	cp.ControlPlane.APIServer = &envtest.APIServer{CertDir: t.TempDir(), StopTimeout: 60 * time.Second}
	cp.ControlPlane.APIServer.Configure().Set("shutdown-watch-termination-grace-period", "1s")
	cfg, err := cp.Start()
	if err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	return cp, cfg
}

// TestFaultAPIServerRestart stops the API server under a running host and
// starts it again: the host recovers by itself, serves a Profile created after
// the restart and repairs an object deleted after it.
func TestFaultAPIServerRestart(t *testing.T) {
	cp, cfg := startRestartableControlPlane(t)
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	shard := "apiserver-" + rand.String(5)
	prefix := "fault-" + shard + "-"
	hostCfg, reg := faultConfig(t, shard, "fault-apiserver", 100)
	// Without leader election: a host that holds a Lease rightly stops when
	// it cannot renew it, and this test is about a host that keeps running.
	h := startHost(t, "host", cfg, hostCfg, reg, false)

	before := prefix + "before"
	faultProfile(t, c, before, shard, true)
	waitConverged(t, c, 30*time.Second, before)

	apiServer := cp.ControlPlane.GetAPIServer()
	addr := apiServer.SecureServing.ListenAddr.HostPort()
	down := time.Now()
	if err := apiServer.Stop(); err != nil {
		t.Fatalf("stop API server: %v", err)
	}
	t.Logf("API server stopped in %s", time.Since(down).Round(time.Millisecond))
	if err := c.List(t.Context(), &kubeflowv1.ProfileList{}); err == nil {
		t.Fatal("the API server still answers after Stop")
	}
	// Long enough for the host's watches to fail and its clients to back off.
	time.Sleep(2 * time.Second)
	h.running(t)
	if err := apiServer.Start(); err != nil {
		t.Fatalf("start API server again: %v", err)
	}
	if got := apiServer.SecureServing.ListenAddr.HostPort(); got != addr {
		t.Fatalf("the API server came back on %s, not %s", got, addr)
	}
	t.Logf("API server down for %s", time.Since(down).Round(time.Millisecond))

	up := time.Now()
	after := prefix + "after"
	faultProfile(t, c, after, shard, false)
	waitConverged(t, c, 30*time.Second, after)
	t.Logf("host converged %s %s after the API server came back", after, time.Since(up).Round(time.Millisecond))

	// The watches on our own objects are back too: a deleted quota returns.
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: before, Name: quotas.DefaultName}}
	if err := c.Delete(t.Context(), rq); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(rq), rq)
		return err == nil, fmt.Sprintf("quota of %s after deletion: %v", before, err)
	})
	h.running(t)
	if d := diffSets(wantObjects(map[string]bool{before: true, after: false}), ownedObjects(t, c, prefix)); d != "" {
		t.Errorf("owned objects:%s", d)
	}
}
