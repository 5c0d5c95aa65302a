package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	securityapi "istio.io/api/security/v1beta1"
	securityv1beta1 "istio.io/client-go/pkg/apis/security/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/core"
)

// moveoverConfig is the host configuration of one step of the move from the
// upstream controller (README, "Replacing the upstream profile
// controller"): config/upstream.yaml's core section without a labels file.
func moveoverConfig(t *testing.T, run, leaseID, enabled string, adopt, handOver bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "host.yaml")
	data := fmt.Sprintf(`
resyncPeriod: 1h
shardSelector: {matchLabels: {`+moveoverShard+`: %s}}
leaderElection: {id: %s, namespace: default}
plugins:
  core:
    enabled: %s
    retention: Retain
    defaults:
      userIdHeader: kubeflow-userid
      mesh: sidecar
      adopt: %t
      handOverFinalizer: %t
`, run, leaseID, enabled, adopt, handOver)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// moveoverShard is the Profile label of the move-over test's shard.
const moveoverShard = "moveover.profilekit.dev/run"

// moveoverHost is a host from server.NewManager whose requests a Counter
// counts.
type moveoverHost struct {
	counter *testenv.Counter
	cancel  context.CancelFunc
	done    chan error
}

func startMoveoverHost(t *testing.T, cp *testenv.Env, cfgPath string) *moveoverHost {
	t.Helper()
	cfg, reg := loadHostConfig(t, cfgPath)
	h := &moveoverHost{counter: &testenv.Counter{}, done: make(chan error, 1)}
	mgr, err := server.NewManager(h.counter.Counting(cp.Config), cfg, reg, server.Options{
		MetricsAddr: "0", ProbeAddr: "0", LeaderElection: true, Logger: logr.Discard(), SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	h.cancel = cancel
	go func() { h.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { _ = h.stop() })
	return h
}

// stop stops the host gracefully and returns what its manager returned.
func (h *moveoverHost) stop() error {
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		return err
	case <-time.After(30 * time.Second):
		return errors.New("host did not stop within 30s")
	}
}

// writes returns the host's mutating requests but those of its leader
// election: the Lease and the Event that says who leads, both in the
// Lease's namespace.
func (h *moveoverHost) writes() []string {
	return slices.DeleteFunc(h.counter.Mutating(), func(r string) bool {
		return strings.HasPrefix(r, "POST /api/v1/namespaces/default/events") || strings.Contains(r, "/namespaces/default/leases")
	})
}

// createUpstreamProfile makes a Profile and what the upstream controller
// makes for it, the way it makes them: its finalizer on the Profile, the
// namespace with the owner annotation and the mesh label, the objects with
// upstream's names and values, each with the Profile as controller, written
// by upstream's field manager. It returns the objects.
func createUpstreamProfile(t *testing.T, c client.Client, name, run string) []client.Object {
	t.Helper()
	ctx := t.Context()
	owner := name + "@example.org"
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"moveover.profilekit.dev/run": run}, Finalizers: []string{core.UpstreamFinalizer}},
		Spec: kubeflowv1.ProfileSpec{
			Owner:             rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: owner},
			ResourceQuotaSpec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("4")}},
		},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: kubeflowv1.GroupVersion.String(), Kind: "Profile", Name: name, UID: p.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	meta := func(n string, ann map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: n, Namespace: name, Annotations: ann, OwnerReferences: []metav1.OwnerReference{ref}}
	}
	admin := map[string]string{"user": owner, "role": "admin"}
	saBinding := func(n, role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: meta(n, nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: n, Namespace: name}},
		}
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: name, Annotations: map[string]string{"owner": owner},
			Labels: map[string]string{"istio-injection": "enabled"}, OwnerReferences: []metav1.OwnerReference{ref},
		}},
		&securityv1beta1.AuthorizationPolicy{
			ObjectMeta: meta(core.AuthorizationPolicy, admin),
			Spec: securityapi.AuthorizationPolicy{
				Action: securityapi.AuthorizationPolicy_ALLOW,
				Rules: []*securityapi.Rule{
					{
						When: []*securityapi.Condition{{Key: "request.headers[kubeflow-userid]", Values: []string{owner}}},
						From: []*securityapi.Rule_From{{Source: &securityapi.Source{Principals: []string{core.DefaultIngressPrincipal, core.DefaultPipelinesUIPrincipal}}}},
					},
					{When: []*securityapi.Condition{{Key: "source.namespace", Values: []string{name}}}},
					{To: []*securityapi.Rule_To{{Operation: &securityapi.Operation{Paths: []string{"/healthz", "/metrics", "/wait-for-drain"}}}}},
					{
						From: []*securityapi.Rule_From{{Source: &securityapi.Source{Principals: []string{core.DefaultNotebookPrincipal}}}},
						To:   []*securityapi.Rule_To{{Operation: &securityapi.Operation{Methods: []string{"GET"}, Paths: []string{"*/api/kernels"}}}},
					},
				},
			},
		},
		&corev1.ServiceAccount{ObjectMeta: meta(core.EditorAccount, nil)},
		saBinding(core.EditorAccount, core.ClusterRoleEdit),
		&corev1.ServiceAccount{ObjectMeta: meta(core.ViewerAccount, nil)},
		saBinding(core.ViewerAccount, core.ClusterRoleView),
		&rbacv1.RoleBinding{
			ObjectMeta: meta(core.OwnerRoleBinding, admin),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: core.ClusterRoleAdmin},
			Subjects:   []rbacv1.Subject{p.Spec.Owner},
		},
		&corev1.ResourceQuota{ObjectMeta: meta(core.ResourceQuota, nil), Spec: p.Spec.ResourceQuotaSpec},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o, client.FieldOwner("manager")); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	return objs
}

// requestsByProfile counts writes per Profile: those to its namespace and
// the objects in it, and those to the Profile itself (status, finalizers).
func requestsByProfile(writes, names []string) (objects, profile map[string]int, other []string) {
	objects, profile = map[string]int{}, map[string]int{}
	for _, w := range writes {
		_, path, _ := strings.Cut(w, " ")
		matched := false
		for _, n := range names {
			switch {
			case path == "/api/v1/namespaces/"+n || strings.HasPrefix(path, "/api/v1/namespaces/"+n+"/") || strings.Contains(path, "/namespaces/"+n+"/"):
				objects[n]++
			case path == "/apis/kubeflow.org/v1/profiles/"+n || path == "/apis/kubeflow.org/v1/profiles/"+n+"/status":
				profile[n]++
			default:
				continue
			}
			matched = true
			break
		}
		if !matched {
			other = append(other, w)
		}
	}
	return objects, profile, other
}

// profilekitLeft returns what of profilekit's a Profile still carries: its
// conditions and finalizers.
func profilekitLeft(p *kubeflowv1.Profile) []string {
	var left []string
	for _, c := range p.Status.Conditions {
		if c.Type == plugins.ConditionReady || c.Type == "CoreReady" {
			left = append(left, "condition "+c.Type)
		}
	}
	for _, f := range p.Finalizers {
		if strings.HasPrefix(f, plugins.FinalizerPrefix) {
			left = append(left, "finalizer "+f)
		}
	}
	return left
}

// TestMoveOverFromUpstream runs the README's steps for replacing the
// upstream profile controller on Profiles and objects made the way that
// controller makes them, counting each step's requests, and then the way
// back: step 1 sends nothing, the adoption one apply per object (same
// UIDs, nothing deleted), the hand-over takes upstream's finalizer off
// each Profile once it is Ready, step 5 sends nothing, and release, with
// the host stopped, leaves no profilekit condition or finalizer and
// upstream's finalizer on every Profile.
func TestMoveOverFromUpstream(t *testing.T) {
	cp, err := testenv.Start(testenv.Options{Istio: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	kubeconfig := cp.KubeconfigFile(t)
	c := cp.Client
	ctx := t.Context()

	const n = 6
	run := rand.String(5)
	leaseID := "profilekit-moveover-" + run
	var names []string
	before := map[string][]client.Object{}
	for i := range n {
		name := fmt.Sprintf("mo-%s-%02d", run, i)
		names = append(names, name)
		before[name] = createUpstreamProfile(t, c, name, run)
	}
	profile := func(name string) *kubeflowv1.Profile {
		t.Helper()
		var p kubeflowv1.Profile
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	// coreDone waits until core has reconciled at least n more Profiles.
	coreDone := func(start float64) {
		t.Helper()
		testhost.Eventually(t, 30*time.Second, func() (bool, string) {
			got := testhost.Reconciles(t, core.Kind) - start
			return got >= n, fmt.Sprintf("%v core reconciles of %d", got, n)
		})
	}

	// Step 1: core enabled only where listed, which no Profile is.
	start := testhost.Reconciles(t, core.Kind)
	h := startMoveoverHost(t, cp, moveoverConfig(t, run, leaseID, "listed", true, false))
	coreDone(start)
	time.Sleep(2 * reconcilersStatusDelay)
	step1 := h.writes()
	if len(step1) != 0 {
		t.Errorf("step 1 (core listed, nothing listed): writes %v, want none", step1)
	}
	for _, name := range names {
		if p := profile(name); len(p.Status.Conditions) != 0 {
			t.Errorf("step 1: %s has conditions %v, want none", name, p.Status.Conditions)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// Step 2 stops the upstream controller, which this test does not run.
	// Step 3 (with step 4's hand-over): core for all, adopting.
	h = startMoveoverHost(t, cp, moveoverConfig(t, run, leaseID, "all", true, true))
	for _, name := range names {
		testhost.Eventually(t, 30*time.Second, func() (bool, string) {
			p := profile(name)
			ready := plugins.FindCondition(p.Status.Conditions, plugins.ConditionReady)
			return ready != nil && ready.Status == plugins.ConditionTrue && !slices.Contains(p.Finalizers, core.UpstreamFinalizer),
				fmt.Sprintf("%s: conditions %v, finalizers %v", name, p.Status.Conditions, p.Finalizers)
		})
	}
	time.Sleep(2 * reconcilersStatusDelay)
	step3 := h.writes()
	objects, profileWrites, other := requestsByProfile(step3, names)
	for _, name := range names {
		if got, want := objects[name], len(before[name]); got != want {
			t.Errorf("step 3: %s: %d writes to its objects, want %d: one apply per adopted object", name, got, want)
		}
		// One status write (CoreReady and Ready together), one patch
		// that hands the finalizer over.
		if got := profileWrites[name]; got != 2 {
			t.Errorf("step 3: %s: %d writes to the Profile, want 2 (its status, upstream's finalizer handed over)", name, got)
		}
		for _, o := range before[name] {
			u := &metav1.PartialObjectMetadata{}
			gvk, err := c.GroupVersionKindFor(o)
			if err != nil {
				t.Fatal(err)
			}
			u.SetGroupVersionKind(gvk)
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), u); err != nil {
				t.Fatalf("%s %s after adoption: %v", gvk.Kind, o.GetName(), err)
			}
			if u.UID != o.GetUID() || !plugins.IsOwnedBy(u.Labels, core.Kind, name) {
				t.Errorf("step 3: %s %s/%s: UID %s (was %s), labels %v; want adopted in place", gvk.Kind, o.GetNamespace(), o.GetName(), u.UID, o.GetUID(), u.Labels)
			}
			// The shard, under our key only: a value on the Profile lands
			// on no object (the namespace above all) under its own key.
			if _, own := u.Labels[moveoverShard]; own || u.Labels[apply.ShardKey(moveoverShard)] != run {
				t.Errorf("step 3: %s %s/%s: labels %v; want the shard under %s only", gvk.Kind, o.GetNamespace(), o.GetName(), u.Labels, apply.ShardKey(moveoverShard))
			}
		}
	}
	// Nothing was read one object at a time before it was taken.
	for _, name := range names {
		for _, path := range []string{
			"/api/v1/namespaces/" + name,
			"/api/v1/namespaces/" + name + "/serviceaccounts/" + core.EditorAccount,
			"/apis/rbac.authorization.k8s.io/v1/namespaces/" + name + "/rolebindings/" + core.OwnerRoleBinding,
			"/apis/security.istio.io/v1/namespaces/" + name + "/authorizationpolicies/" + core.AuthorizationPolicy,
			"/api/v1/namespaces/" + name + "/resourcequotas/" + core.ResourceQuota,
		} {
			if got := h.counter.Count("GET", path); got != 0 {
				t.Errorf("step 3: %d reads of %s", got, path)
			}
		}
	}
	for _, w := range step3 {
		if strings.HasPrefix(w, "DELETE") {
			t.Errorf("step 3: a deletion during adoption: %s", w)
		}
	}
	if len(other) != 0 {
		t.Errorf("step 3: other writes %v", other)
	}
	adopted := 0
	for _, name := range names {
		adopted += len(before[name])
	}
	t.Logf("step 1: %d writes; step 3: %d writes for %d Profiles: %d to %d adopted objects, %d to the Profiles (status, finalizer)",
		len(step1), len(step3), n, sum(objects), adopted, sum(profileWrites))

	// Step 4 was the hand-over: a Profile deleted now is not held.
	gone := names[n-1]
	if err := c.Delete(ctx, profile(gone)); err != nil {
		t.Fatal(err)
	}
	testhost.WaitProfileGone(t, c, gone, 10*time.Second)
	names = names[:n-1]
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// Step 5: adopt off. Every object is the host's now: nothing to write.
	start = testhost.Reconciles(t, core.Kind)
	h = startMoveoverHost(t, cp, moveoverConfig(t, run, leaseID, "all", false, true))
	coreDone(start)
	time.Sleep(2 * reconcilersStatusDelay)
	step5 := h.writes()
	if len(step5) != 0 {
		t.Errorf("step 5 (adopt off): writes %v, want none", step5)
	}
	t.Logf("step 5: %d writes", len(step5))

	// The way back: release refuses while the host runs.
	backCfg := moveoverConfig(t, run, leaseID, "all", false, true)
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		code, _, stderr := runMain(ctx, "release", "--config", backCfg, "--kubeconfig", kubeconfig)
		return code == 1 && strings.Contains(stderr, "the host still runs"), fmt.Sprintf("exit %d: %s", code, stderr)
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMain(ctx, "release", "--config", backCfg, "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("release: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("release:\n%s", stdout)
	for _, name := range names {
		p := profile(name)
		if left := profilekitLeft(p); len(left) != 0 {
			t.Errorf("after release, %s still carries %v", name, left)
		}
		if !slices.Contains(p.Finalizers, core.UpstreamFinalizer) {
			t.Errorf("after release, %s lacks %s: finalizers %v", name, core.UpstreamFinalizer, p.Finalizers)
		}
	}
	if code, stdout, _ := runMain(ctx, "release", "--config", backCfg, "--kubeconfig", kubeconfig); code != 0 || !strings.Contains(stdout, fmt.Sprintf("released 0 of %d Profiles", len(names))) {
		t.Errorf("release again: exit %d, %s; want nothing left to release", code, stdout)
	}
}

// reconcilersStatusDelay is the StatusWriter's default gathering delay.
const reconcilersStatusDelay = 250 * time.Millisecond

func sum(m map[string]int) int {
	total := 0
	for _, v := range m {
		total += v
	}
	return total
}
