package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/reconcilers"
)

// The condition and the Event reason with which the host says that another
// controller put the upstream finalizer back (see reconcilers'
// ConditionFinalizerHandOver and ReasonFinalizerReturned).
const (
	fightCondition = "FinalizerHandOver"
	fightReason    = "FinalizerReturned"
	// standInManager is the stand-in upstream controller's field manager.
	standInManager = "upstream-manager"
)

// shippedUpstreamConfig returns config/upstream.yaml as shipped, but for
// what a test cluster cannot have or must keep apart: the shard, the
// Lease's namespace and id, and the labels file mounted from a ConfigMap.
func shippedUpstreamConfig(t *testing.T, run, leaseID string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("config", "upstream.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["shardSelector"] = map[string]any{"matchLabels": map[string]any{moveoverShard: run}}
	cfg["leaderElection"] = map[string]any{"id": leaseID, "namespace": "default"}
	coreSection := cfg["plugins"].(map[string]any)["core"].(map[string]any)
	defaults := coreSection["defaults"].(map[string]any)
	if defaults["adopt"] != true || defaults["handOverFinalizer"] != true {
		t.Fatalf("config/upstream.yaml: adopt %v, handOverFinalizer %v; the test runs the shipped hand-over", defaults["adopt"], defaults["handOverFinalizer"])
	}
	delete(defaults, "namespaceLabelsPath")
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "upstream.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// upstreamStandIn plays the upstream profile controller's writes: on every
// change of a Profile (its pass), it puts profile-finalizer back when it is
// missing, with an Update, and rewrites namespaceAdmin's roleRef and
// subjects from the Profile's owner, with an Update, as upstream does.
type upstreamStandIn struct {
	readds, rewrites atomic.Int64
	cancel           context.CancelFunc
	done             chan struct{}
}

func startUpstreamStandIn(t *testing.T, cp *testenv.Env, names []string) *upstreamStandIn {
	t.Helper()
	c, err := client.New(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c = client.WithFieldOwner(c, standInManager)
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	s := &upstreamStandIn{cancel: cancel, done: make(chan struct{})}
	seen := map[string]string{}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, name := range names {
				s.pass(ctx, c, name, seen)
			}
		}
	}()
	t.Cleanup(s.stop)
	return s
}

// pass is one of the stand-in's passes over the Profile name, run when it
// changed since the last one.
func (s *upstreamStandIn) pass(ctx context.Context, c client.Client, name string, seen map[string]string) {
	var p kubeflowv1.Profile
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil || p.ResourceVersion == seen[name] || !p.DeletionTimestamp.IsZero() {
		return
	}
	seen[name] = p.ResourceVersion
	if controllerutil.AddFinalizer(&p, core.UpstreamFinalizer) {
		if err := c.Update(ctx, &p); err == nil {
			s.readds.Add(1)
			seen[name] = p.ResourceVersion
		}
	}
	var rb rbacv1.RoleBinding
	if err := c.Get(ctx, client.ObjectKey{Namespace: name, Name: core.OwnerRoleBinding}, &rb); err != nil {
		return
	}
	rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: core.ClusterRoleAdmin}
	rb.Subjects = []rbacv1.Subject{p.Spec.Owner}
	if err := c.Update(ctx, &rb); err == nil {
		s.rewrites.Add(1)
	}
}

func (s *upstreamStandIn) stop() {
	s.cancel()
	<-s.done
}

// TestMoveOverBesideUpstream runs the host with the shipped
// config/upstream.yaml (adopt and handOverFinalizer on) beside a stand-in
// of the upstream controller that puts profile-finalizer back whenever it
// is missing: the host hands the finalizer over once, sees it come back,
// leaves it in place, says so on each Profile (the FinalizerHandOver
// condition, one Event naming the stand-in's field manager), and its
// writes over the window stay within a small bound. Once the stand-in
// stops, the host hands the finalizer over again by itself and the
// condition goes.
// fightWindow is how long TestMoveOverBesideUpstream watches both
// controllers: make test's sample is 20 s; -moveover.window=60s is the
// idle minute the move-over's bound is stated for.
var fightWindow = flag.Duration("moveover.window", 20*time.Second, "TestMoveOverBesideUpstream: how long both controllers run idle side by side")

func TestMoveOverBesideUpstream(t *testing.T) {
	cp, err := testenv.Start(testenv.Options{Istio: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	c := cp.Client
	ctx := t.Context()

	const n = 3
	window := *fightWindow
	// handOvers is how many hand-overs the back-off allows in the window
	// (at 0, then a back-off later, doubling each time), and one more in
	// case one falls due at its end.
	handOvers := 1
	for at, b := time.Duration(0), reconcilers.HandOverBackoff; at+b < window; at, b = at+b, 2*b {
		handOvers++
	}
	handOvers++
	// maxProfileWrites bounds the host's writes to each Profile over the
	// window: its status (CoreReady and Ready), the FinalizerHandOver
	// condition, and the hand-overs; maxReadds the stand-in's re-adds of its
	// finalizer to each Profile: one per hand-over.
	maxProfileWrites, maxReadds := 2+handOvers, handOvers
	run := rand.String(5)
	var names []string
	before := map[string][]client.Object{}
	for i := range n {
		name := fmt.Sprintf("fight-%s-%02d", run, i)
		names = append(names, name)
		before[name] = createUpstreamProfile(t, c, name, run, i%2 == 0)
	}
	standIn := startUpstreamStandIn(t, cp, names)
	h := startMoveoverHost(t, cp, shippedUpstreamConfig(t, run, "profilekit-fight-"+run))
	started := time.Now()
	profile := func(name string) *kubeflowv1.Profile {
		t.Helper()
		var p kubeflowv1.Profile
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	for _, name := range names {
		testhost.Eventually(t, 30*time.Second, func() (bool, string) {
			p := profile(name)
			ready := plugins.FindCondition(p.Status.Conditions, "CoreReady")
			return ready != nil && ready.Status == plugins.ConditionTrue, fmt.Sprintf("%s: conditions %v", name, p.Status.Conditions)
		})
	}
	time.Sleep(time.Until(started.Add(window)))

	writes := h.writes()
	objects, profileWrites, other := requestsByProfile(writes, names)
	readds, rewrites := standIn.readds.Load(), standIn.rewrites.Load()
	t.Logf("over %s beside the stand-in: host %d writes (%d to %d Profiles, %d to their objects, %d other: %v); stand-in %d finalizer re-adds, %d namespaceAdmin rewrites",
		window, len(writes), sum(profileWrites), n, sum(objects), len(other), other, readds, rewrites)
	for _, name := range names {
		if got := profileWrites[name]; got > maxProfileWrites {
			t.Errorf("%s: the host wrote the Profile %d times in %s beside the upstream controller, want at most %d", name, got, window, maxProfileWrites)
		}
		if got, want := objects[name], len(before[name]); got > want {
			t.Errorf("%s: the host wrote its objects %d times in %s, want at most %d (one adoption each)", name, got, window, want)
		}
	}
	if readds > int64(maxReadds*n) {
		t.Errorf("the stand-in put its finalizer back %d times in %s, want at most %d", readds, window, maxReadds*n)
	}
	for _, name := range names {
		p := profile(name)
		cond := plugins.FindCondition(p.Status.Conditions, fightCondition)
		if cond == nil || cond.Status != plugins.ConditionFalse || !strings.Contains(cond.Message, standInManager) {
			t.Errorf("%s: condition %s %+v, want False naming %q", name, fightCondition, cond, standInManager)
		}
		if !slices.Contains(p.Finalizers, core.UpstreamFinalizer) {
			t.Errorf("%s: finalizers %v, want %s left in place while the other controller runs", name, p.Finalizers, core.UpstreamFinalizer)
		}
		var fights []string
		for _, e := range testhost.Events(t, c, name) {
			if strings.Contains(e, " "+fightReason+" ") {
				fights = append(fights, e)
			}
		}
		if len(fights) != 1 || !strings.Contains(fights[0], " x1 ") || !strings.Contains(fights[0], standInManager) {
			t.Errorf("%s: %s Events %v, want one naming %q", name, fightReason, fights, standInManager)
		}
	}

	// The other controller stops: the host hands the finalizer over again
	// by itself, within its first back-off and one check, and the
	// condition goes once the hand-over held.
	standIn.stop()
	stopped := time.Now()
	for _, name := range names {
		testhost.Eventually(t, 60*time.Second, func() (bool, string) {
			p := profile(name)
			return !slices.Contains(p.Finalizers, core.UpstreamFinalizer) && plugins.FindCondition(p.Status.Conditions, fightCondition) == nil,
				fmt.Sprintf("%s: finalizers %v, conditions %v", name, p.Finalizers, p.Status.Conditions)
		})
	}
	t.Logf("after the stand-in stopped: every finalizer handed over and every %s condition gone in %s", fightCondition, time.Since(stopped).Round(time.Second))
}
