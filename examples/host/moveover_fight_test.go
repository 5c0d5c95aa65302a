package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	securityapi "istio.io/api/security/v1beta1"
	securityv1beta1 "istio.io/client-go/pkg/apis/security/v1beta1"
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
	// fightGroupsHeader is the groups header the test's host configures.
	fightGroupsHeader = "kubeflow-groups"
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
	// The groups header of a platform with groups (upstream has none), so
	// that a Group owner's policy admits its members.
	defaults["groups"] = map[string]any{"header": fightGroupsHeader}
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
// change of a Profile or of its ns-owner-access-istio (its pass), it puts
// profile-finalizer back when it is missing, and rewrites namespaceAdmin's
// roleRef and subjects from the Profile's owner and the policy's rules
// when they differ from its own, each with an Update, as upstream does.
// Its policy matches the owner's name against the user-id header whatever
// the owner's kind, so it undoes what the host writes for a Group owner.
type upstreamStandIn struct {
	readds, rewrites atomic.Int64
	// policyRewrites counts the policy's rewrites by Profile name.
	policyRewrites sync.Map
	cancel         context.CancelFunc
	done           chan struct{}
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
// or its policy changed since the last one.
func (s *upstreamStandIn) pass(ctx context.Context, c client.Client, name string, seen map[string]string) {
	var p kubeflowv1.Profile
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil || !p.DeletionTimestamp.IsZero() {
		return
	}
	var ap securityv1beta1.AuthorizationPolicy
	policyErr := c.Get(ctx, client.ObjectKey{Namespace: name, Name: core.AuthorizationPolicy}, &ap)
	state := p.ResourceVersion + "/" + ap.ResourceVersion
	if state == seen[name] {
		return
	}
	seen[name] = state
	if controllerutil.AddFinalizer(&p, core.UpstreamFinalizer) {
		if err := c.Update(ctx, &p); err == nil {
			s.readds.Add(1)
		}
	}
	want := securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_ALLOW, Rules: upstreamRules(name, p.Spec.Owner.Name)}
	if policyErr == nil && !proto.Equal(&ap.Spec, &want) {
		ap.Spec.Action, ap.Spec.Rules = want.Action, want.Rules
		if err := c.Update(ctx, &ap); err == nil {
			n, _ := s.policyRewrites.LoadOrStore(name, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
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

// policyRewritesOf returns how many times the stand-in rewrote the
// policy of the Profile name.
func (s *upstreamStandIn) policyRewritesOf(name string) int64 {
	if n, ok := s.policyRewrites.Load(name); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

func (s *upstreamStandIn) stop() {
	s.cancel()
	<-s.done
}

// fightWindow is how long TestMoveOverBesideUpstream watches both
// controllers: make test's sample is 20 s; -moveover.window=60s is the
// idle minute the move-over's bound is stated for.
var fightWindow = flag.Duration("moveover.window", 20*time.Second, "TestMoveOverBesideUpstream: how long both controllers run idle side by side")

// backoffsIn returns how many back-offs, starting at first and doubling,
// end within window after its start, and one more in case one falls due at
// its end; and how long the one running at the window's end lasts.
func backoffsIn(window, first time.Duration) (ends int, last time.Duration) {
	at, b := time.Duration(0), first
	for ; at+b < window; at, b = at+b, 2*b {
		ends++
	}
	return ends + 1, b
}

// TestMoveOverBesideUpstream runs the host with the shipped
// config/upstream.yaml (adopt and handOverFinalizer on) beside a stand-in
// of the upstream controller that puts profile-finalizer back whenever it
// is missing and rewrites the owner's policy in its own form: the host
// hands the finalizer over once, sees it come back, leaves it in place,
// says so on each Profile (the FinalizerHandOver condition, one Event
// naming the stand-in's field manager). A Group owner's policy, which the
// stand-in undoes after each repair, is put back a few times, then left
// alone for a back-off, and the Profile says so (CoreReady False,
// Contested, naming the stand-in). The host's writes over the window stay
// within a small bound. Once the stand-in stops, the host hands the
// finalizer over and puts the policy back by itself, and the conditions
// clear.
//
// It runs alone: it bounds the writes in a time window, and beside the
// other tests on a busy machine the host once wrote a Profile 5 times in
// 20 s where 4 are allowed.
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
	// handOvers is how many hand-overs the back-off allows in the window:
	// the first, and one at the end of each back-off.
	handOverEnds, _ := backoffsIn(window, reconcilers.HandOverBackoff)
	handOvers := 1 + handOverEnds
	// maxProfileWrites bounds the host's writes to each Profile over the
	// window: its status (CoreReady and Ready), the FinalizerHandOver
	// condition, and the hand-overs; maxReadds the stand-in's re-adds of its
	// finalizer to each Profile: one per hand-over.
	maxProfileWrites, maxReadds := 2+handOvers, handOvers
	// repairs bounds the host's writes of the Group owner's policy after
	// its adoption: RepairsBeforeBackoff in a row, then one at the end of
	// each back-off. Each repair there makes CoreReady True, and its undoing
	// False again.
	repairEnds, lastHold := backoffsIn(window, reconcilers.RepairBackoff)
	repairs := reconcilers.RepairsBeforeBackoff + repairEnds
	run := rand.String(5)
	var names []string
	before := map[string][]client.Object{}
	for i := range n {
		name := fmt.Sprintf("fight-%s-%02d", run, i)
		names = append(names, name)
		before[name] = createUpstreamProfile(t, c, name, run, userOwner(name, i%2 == 0))
	}
	group := fmt.Sprintf("fight-%s-group", run)
	before[group] = createUpstreamProfile(t, c, group, run, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team-" + run})
	groupVersions := profileVersions(t, cp, group)
	all := append(slices.Clone(names), group)
	standIn := startUpstreamStandIn(t, cp, all)
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
	objects, profileWrites, other := requestsByProfile(writes, all)
	readds, rewrites := standIn.readds.Load(), standIn.rewrites.Load()
	t.Logf("over %s beside the stand-in: host %d writes (%d to %d Profiles, %d to their objects, %d other: %v); stand-in %d finalizer re-adds, %d namespaceAdmin rewrites, %d rewrites of the Group owner's policy; the host wrote the Group-owned Profile's %d objects %d times",
		window, len(writes), sum(profileWrites), len(all), sum(objects), len(other), other, readds, rewrites, standIn.policyRewritesOf(group), len(before[group]), objects[group])
	t.Logf("%s: the host's writes of the Profile: carried out %v, refused %v; its versions:\n%s", group, h.counter.Landed("/profiles/"+group), h.counter.Refused("/profiles/"+group), strings.Join(groupVersions(), "\n"))
	for _, name := range names {
		if got := profileWrites[name]; got > maxProfileWrites {
			t.Errorf("%s: the host wrote the Profile %d times in %s beside the upstream controller, want at most %d: carried out %v, refused %v", name, got, window, maxProfileWrites,
				h.counter.Landed("/profiles/"+name), h.counter.Refused("/profiles/"+name))
		}
		if got, want := objects[name], len(before[name]); got > want {
			t.Errorf("%s: the host wrote its objects %d times in %s, want at most %d (one adoption each)", name, got, window, want)
		}
		if got := standIn.policyRewritesOf(name); got != 0 {
			t.Errorf("%s: the stand-in rewrote the User owner's policy %d times, want 0: the host adopts it in upstream's form", name, got)
		}
	}
	if readds > int64(maxReadds*n) {
		t.Errorf("the stand-in put its finalizer back %d times in %s, want at most %d", readds, window, maxReadds*n)
	}
	// The policy's adoption costs two writes: upstream's form holds the
	// rules with other values, so the apply that does not force is refused.
	if got, want := objects[group], len(before[group])+1+repairs; got > want {
		t.Errorf("%s: the host wrote its objects %d times in %s, want at most %d (one adoption each, two for the policy, %d repairs of it)", group, got, window, want, repairs)
	}
	// The Group owner's Profile is written as every Profile is (its status,
	// the FinalizerHandOver condition, the hand-overs: maxProfileWrites),
	// and CoreReady goes False when the policy is contested and True and
	// False again at each repair's end. The condition and the contest are
	// one status write when they fall close together, two when not.
	if got, want := profileWrites[group], maxProfileWrites+2*repairEnds; got > want {
		t.Errorf("%s: the host wrote the Profile %d times in %s, want at most %d: carried out %v, refused %v; its versions:\n%s", group, got, window, want,
			h.counter.Landed("/profiles/"+group), h.counter.Refused("/profiles/"+group), strings.Join(groupVersions(), "\n"))
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
		if fights := eventsOf(t, c, name, fightReason); len(fights) != 1 || !strings.Contains(fights[0], " x1 ") || !strings.Contains(fights[0], standInManager) {
			t.Errorf("%s: %s Events %v, want one naming %q", name, fightReason, fights, standInManager)
		}
	}
	ready := plugins.FindCondition(profile(group).Status.Conditions, "CoreReady")
	if ready == nil || ready.Status != plugins.ConditionFalse || !strings.HasPrefix(ready.Message, plugins.ReasonContested+":") ||
		!strings.Contains(ready.Message, standInManager) || !strings.Contains(ready.Message, core.AuthorizationPolicy) {
		t.Errorf("%s: CoreReady %+v, want False, %s, naming %q and %s", group, ready, plugins.ReasonContested, standInManager, core.AuthorizationPolicy)
	}
	if contested := eventsOf(t, c, group, plugins.ReasonContested); len(contested) == 0 || len(contested) > repairEnds || !strings.Contains(contested[0], standInManager) {
		t.Errorf("%s: %s Events %v, want 1 to %d naming %q", group, plugins.ReasonContested, contested, repairEnds, standInManager)
	}

	// The other controller stops: the host hands the finalizer over again
	// by itself, within its first back-off and one check, and puts the
	// Group owner's policy back once its back-off ends; the conditions go.
	standIn.stop()
	stopped := time.Now()
	for _, name := range all {
		testhost.Eventually(t, lastHold+30*time.Second, func() (bool, string) {
			p := profile(name)
			ready := plugins.FindCondition(p.Status.Conditions, "CoreReady")
			return !slices.Contains(p.Finalizers, core.UpstreamFinalizer) && plugins.FindCondition(p.Status.Conditions, fightCondition) == nil &&
					ready != nil && ready.Status == plugins.ConditionTrue,
				fmt.Sprintf("%s: finalizers %v, conditions %v", name, p.Finalizers, p.Status.Conditions)
		})
	}
	var ap securityv1beta1.AuthorizationPolicy
	if err := c.Get(ctx, client.ObjectKey{Namespace: group, Name: core.AuthorizationPolicy}, &ap); err != nil {
		t.Fatal(err)
	}
	if key := ap.Spec.Rules[0].When[0].Key; !strings.Contains(key, fightGroupsHeader) {
		t.Errorf("%s: the owner's policy matches %s, want the groups header %s: the host's form is back", group, key, fightGroupsHeader)
	}
	t.Logf("after the stand-in stopped: every finalizer handed over, the Group owner's policy put back and every condition clear in %s", time.Since(stopped).Round(time.Second))
}

// eventsOf returns the Events on the Profile name with reason.
func eventsOf(t *testing.T, c client.Client, name, reason string) []string {
	t.Helper()
	var found []string
	for _, e := range testhost.Events(t, c, name) {
		if strings.Contains(e, " "+reason+" ") {
			found = append(found, e)
		}
	}
	return found
}
