package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/core"
)

// TestMoveOverFromUpstream runs the steps of docs/moveover.md for replacing
// the upstream profile controller on Profiles and objects made the way that
// controller makes them (half of the owners without apiGroup, as kubectl
// and KFAM write them), counting each step's requests, and then the way
// back: step 1 sends nothing, the adoption one apply per object (same
// UIDs, nothing deleted), the hand-over takes upstream's finalizer off
// each Profile once it is Ready, step 5 sends nothing, and release, with
// the host stopped, leaves no profilekit condition or finalizer and
// upstream's finalizer on every Profile.
//
// It runs alone: beside the other tests, on a busy machine, one adopted
// object of 48 took a second apply (9 writes where 8 are wanted), which
// this test exists to see; why is not known yet.
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
		// Every other owner in kubectl's and KFAM's shape: no apiGroup.
		before[name] = createUpstreamProfile(t, c, name, run, userOwner(name, i%2 == 0))
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
	// Writes refused with a conflict (the Profile changed between the
	// cache's view and the write) are sent again; they are counted apart,
	// as the machine's load decides how many there are.
	step3, refused := h.landed()
	if len(refused) > 0 {
		t.Logf("step 3: writes refused and sent again: %v", refused)
	}
	objects, profileWrites, other := requestsByProfile(step3, names)
	for _, name := range names {
		if got, want := objects[name], len(before[name]); got != want {
			t.Errorf("step 3: %s: %d writes to its objects, want %d: one apply per adopted object", name, got, want)
		}
		// One status write (CoreReady and Ready together), one patch
		// that hands the finalizer over.
		if got := profileWrites[name]; got != 2 {
			t.Errorf("step 3: %s: %d writes to the Profile, want 2 (its status, upstream's finalizer handed over); landed: %v; its Events: %v", name, got, profileWritesOf(step3, name), profileEvents(t, c, name))
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
		var events []string
		for _, name := range names {
			events = append(events, profileEvents(t, c, name)...)
		}
		t.Errorf("step 3: other writes %v; the Profiles' Events: %v", other, events)
	}
	adopted := 0
	var shapes [2]struct{ writes, objects int }
	for i, name := range names {
		adopted += len(before[name])
		shapes[i%2].writes += objects[name]
		shapes[i%2].objects += len(before[name])
	}
	t.Logf("step 1: %d writes; step 3: %d writes for %d Profiles: %d to %d adopted objects, %d to the Profiles (status, finalizer)",
		len(step1), len(step3), n, sum(objects), adopted, sum(profileWrites))
	t.Logf("step 3: owners with apiGroup: %d writes to %d adopted objects; owners without apiGroup: %d writes to %d adopted objects",
		shapes[0].writes, shapes[0].objects, shapes[1].writes, shapes[1].objects)

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
