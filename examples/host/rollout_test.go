package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/rollout"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// TestRolloutStaged converges the Profiles under testdata/rollout/base.yaml,
// then restarts the host with quota.yaml, a changed quota with rollout
// settings of 5% batches and minReady 1s. It watches every batch: only
// Profiles of the batches reached have the new quota, each batch takes 5%,
// and a batch starts only when the earlier ones are done. The host is
// restarted in the middle, and the rollout continues where it was.
func TestRolloutStaged(t *testing.T) {
	n := *rolloutProfiles
	ctx := context.WithoutCancel(t.Context())
	forgetRollout(t)
	prefix := "ro-" + rand.String(4)
	h := rolloutHost(t, "rollout-base", "testdata/rollout/base.yaml", env.Config)
	start := time.Now()
	profiles := createRolloutProfiles(t, prefix, n)
	waitQuotas(t, prefix, profiles, "2", 3*time.Minute)
	waitReady(t, profiles, time.Minute)
	t.Logf("%d Profiles converged with base.yaml in %s", n, time.Since(start).Round(time.Millisecond))
	base := rolloutState(t)
	if base == nil || base["candidateRevision"] != "" {
		t.Fatalf("a first start makes its configuration stable at once; state %v", base)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	h = rolloutHost(t, "rollout-quota", "testdata/rollout/quota.yaml", env.Config)
	size := rollout.BatchSize(hostconfig.Batch{Percent: 5}, n)
	want := rollout.Batches(hostconfig.Batch{Percent: 5}, n)
	lastBatch, restarted := 0, false
	batchStart := time.Now()
	testhost.Eventually(t, 3*time.Minute, func() (bool, string) {
		seen := rolloutQuotas(t, prefix)
		st := rolloutState(t)
		if st["candidateRevision"] == "" {
			return st["stableRevision"] != base["stableRevision"], "the host has not begun the rollout"
		}
		batches, _ := strconv.Atoi(st["batches"])
		to, _ := strconv.ParseUint(st["to"], 16, 64)
		from, _ := strconv.ParseUint(st["from"], 16, 64)
		// Only Profiles of the batches reached have the new quota, and
		// every Profile of an earlier batch has it.
		changed, inBatch := 0, 0
		for _, p := range profiles {
			reached := batches > 0 && p.key <= to
			if seen[p.name].cpu == "4" {
				changed++
				if !reached {
					t.Fatalf("batch %d: Profile %s (key %x above %x) has the new quota before its batch", batches, p.name, p.key, to)
				}
			}
			earlier := batches > 1 && p.key <= from
			if earlier && seen[p.name].cpu != "4" {
				t.Fatalf("batch %d started before Profile %s of an earlier batch had the new quota", batches, p.name)
			}
			if reached && (batches == 1 || p.key > from) {
				inBatch++
			}
		}
		if batches != lastBatch {
			if batches > 0 && inBatch != size && batches != want {
				t.Fatalf("batch %d holds %d Profiles, want %d", batches, inBatch, size)
			}
			t.Logf("batch %2d of %d started after %5s: %4d Profiles in it, %4d quotas changed so far", batches, want,
				time.Since(batchStart).Round(10*time.Millisecond), inBatch, changed)
			lastBatch, batchStart = batches, time.Now()
		}
		if batches == 3 && !restarted {
			// A restart mid-rollout continues from where it was.
			restarted = true
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			if got := rolloutState(t)["batches"]; got != "3" {
				t.Fatalf("after the stop the state says batch %s, want 3", got)
			}
			h = rolloutHost(t, "rollout-quota-again", "testdata/rollout/quota.yaml", env.Config)
			t.Logf("host restarted at batch 3")
		}
		return false, fmt.Sprintf("batch %d, %d of %d quotas changed", batches, changed, n)
	})
	if lastBatch != want {
		t.Errorf("the rollout went through %d batches, want %d", lastBatch, want)
	}
	waitQuotas(t, prefix, profiles, "4", 30*time.Second)
	t.Logf("rollout of %d Profiles in %d batches of %d complete in %s", n, want, size, time.Since(start).Round(time.Millisecond))
	st := rolloutState(t)
	if !strings.Contains(st["summary"], "rolled out to every Profile") {
		t.Errorf("summary %q", st["summary"])
	}
	if got := gauge(t, "profilekit_rollout_paused"); got != 0 {
		t.Errorf("profilekit_rollout_paused = %g", got)
	}
	// New quotas: requests.memory dropped.
	var q corev1.ResourceQuotaList
	if err := env.Client.List(ctx, &q, client.InNamespace(profiles[0].name)); err != nil || len(q.Items) != 1 {
		t.Fatalf("quota of %s: %v %d", profiles[0].name, err, len(q.Items))
	}
	if _, ok := q.Items[0].Spec.Hard[corev1.ResourceRequestsMemory]; ok {
		t.Errorf("requests.memory was not dropped: %v", q.Items[0].Spec.Hard)
	}
}

// TestRolloutPaused converges the Profiles under base.yaml, then restarts
// the host with broken.yaml, whose quota every Profile fails. The rollout
// stops at its first batch: its Profiles say why (QuotasReady False,
// RolloutPaused True, an Event), the state and the metrics say paused, and
// the other 95% get no write at all. A fix (quota.yaml) is a new
// candidate from the first batch; a roll back to base.yaml brings the
// batch back and clears the pause.
func TestRolloutPaused(t *testing.T) {
	n := *rolloutProfiles
	ctx := context.WithoutCancel(t.Context())
	prefix := "rp-" + rand.String(4)
	profiles, before, base := stableBase(t, prefix, n)

	counter := &testenv.Counter{}
	start := time.Now()
	h := rolloutHost(t, "rollout-broken", "testdata/rollout/broken.yaml", counter.Counting(env.Config))
	var st map[string]string
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		st = rolloutState(t)
		return st["paused"] == "true", fmt.Sprintf("state %v", st)
	})
	t.Logf("paused %s after the start: %s", time.Since(start).Round(time.Millisecond), st["reason"])
	// Long enough for a second batch, were the pause not one.
	time.Sleep(3 * time.Second)
	st = rolloutState(t)
	if st["batches"] != "1" || st["paused"] != "true" || !strings.Contains(st["reason"], "plugin quotas failed") {
		t.Fatalf("state %v", st)
	}
	t.Logf("summary: %s", st["summary"])
	to, _ := strconv.ParseUint(st["to"], 16, 64)
	after := rolloutQuotas(t, prefix)
	var batch, others []string
	for _, p := range profiles {
		if p.key <= to {
			batch = append(batch, p.name)
			continue
		}
		others = append(others, p.name)
		if after[p.name] != before[p.name] {
			t.Errorf("Profile %s of no batch: quota %v, was %v", p.name, after[p.name], before[p.name])
		}
	}
	if len(batch) != rollout.BatchSize(hostconfig.Batch{Percent: 5}, n) {
		t.Errorf("first batch holds %d Profiles", len(batch))
	}
	// Nothing was written for the other 95%: not in their namespaces, not
	// to the Profiles themselves.
	var paths []string
	for _, name := range others {
		paths = append(paths, "/namespaces/"+name+"/", "/profiles/"+name)
	}
	w := counter.Mutating(paths...)
	if len(w) > 0 {
		t.Errorf("%d writes for Profiles of no batch, first %v", len(w), w[:min(5, len(w))])
	}
	t.Logf("%d Profiles in the paused batch; %d others: %d writes, quotas' resourceVersions unchanged; %d writes in all",
		len(batch), len(others), len(w), len(counter.Mutating()))
	// Every Profile of the batch says why, those whose pass failed after
	// the pause too, each with one Event.
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		for _, name := range batch {
			var p kubeflowv1.Profile
			if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			q := plugins.FindCondition(p.Status.Conditions, "QuotasReady")
			rp := plugins.FindCondition(p.Status.Conditions, rollout.ConditionRolloutPaused)
			if q == nil || q.Status != plugins.ConditionFalse || rp == nil || rp.Status != plugins.ConditionTrue || !strings.Contains(rp.Message, "plugin quotas failed") {
				return false, fmt.Sprintf("Profile %s of the batch: QuotasReady %+v, RolloutPaused %+v", name, q, rp)
			}
		}
		var events eventsv1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace("default")); err != nil {
			return false, err.Error()
		}
		evs := 0
		for _, e := range events.Items {
			if e.Reason == rollout.ReasonRolloutPaused && strings.HasPrefix(e.Regarding.Name, prefix) {
				evs++
			}
		}
		return evs == len(batch), fmt.Sprintf("%d RolloutPaused Events, want one per Profile of the batch, %d", evs, len(batch))
	})
	if got := gauge(t, "profilekit_rollout_paused"); got != 1 {
		t.Errorf("profilekit_rollout_paused = %g, want 1", got)
	}
	if got := gauge(t, "profilekit_rollout_profiles", "state", "updated"); got != float64(len(batch)) {
		t.Errorf("profilekit_rollout_profiles{state=updated} = %g, want %d", got, len(batch))
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// Fix forward: a new candidate starts again from the first batch,
	// unpaused.
	h = rolloutHost(t, "rollout-fix", "testdata/rollout/quota.yaml", env.Config)
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		fixed := rolloutState(t)
		return fixed["candidateRevision"] != "" && fixed["candidateRevision"] != st["candidateRevision"] && fixed["paused"] == "false" && fixed["batches"] == "1",
			fmt.Sprintf("state %v", fixed)
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// Roll back: the batch gets the stable configuration again.
	rolloutHost(t, "rollout-back", "testdata/rollout/base.yaml", env.Config)
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		if st := rolloutState(t); st["candidateRevision"] != "" {
			return false, fmt.Sprintf("state %v", st)
		}
		seen := rolloutQuotas(t, prefix)
		n := 0
		for _, name := range batch {
			if seen[name].cpu != "2" {
				continue
			}
			var p kubeflowv1.Profile
			if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			q := plugins.FindCondition(p.Status.Conditions, "QuotasReady")
			if q != nil && q.Status == plugins.ConditionTrue && plugins.FindCondition(p.Status.Conditions, rollout.ConditionRolloutPaused) == nil {
				n++
			}
		}
		return n == len(batch), fmt.Sprintf("%d of %d Profiles of the batch back to the stable quota, Ready, without RolloutPaused", n, len(batch))
	})
	if st := rolloutState(t); st["paused"] != "" || st["stableRevision"] != base {
		t.Errorf("after the roll back: state %v", st)
	}
}

// TestRolloutWithoutPause: with pauseOnFailure false, a configuration that
// fails on every Profile still rolls out batch by batch to the end. The
// failures show on each Profile's plugin condition; the rollout never
// pauses nor marks a Profile RolloutPaused; the candidate becomes the
// stable configuration.
func TestRolloutWithoutPause(t *testing.T) {
	n := min(*rolloutProfiles, 100)
	ctx := context.WithoutCancel(t.Context())
	profiles, _, base := stableBase(t, "rn-"+rand.String(4), n)

	start := time.Now()
	rolloutHost(t, "rollout-nopause", "testdata/rollout/broken-nopause.yaml", env.Config)
	var st map[string]string
	seen := map[string]bool{}
	testhost.Eventually(t, 2*time.Minute, func() (bool, string) {
		st = rolloutState(t)
		if st["paused"] == "true" {
			t.Fatalf("the rollout paused: %v", st)
		}
		if st["candidateRevision"] != "" {
			seen[st["batches"]] = true
		}
		return st["candidateRevision"] == "" && st["stableRevision"] != base, fmt.Sprintf("state %v", st)
	})
	t.Logf("rollout of %d failing Profiles complete in %s, batches seen %v: %s", n, time.Since(start).Round(time.Millisecond), slices.Sorted(maps.Keys(seen)), st["summary"])
	if len(seen) < 2 {
		t.Errorf("batches seen while rolling out: %v, want several", seen)
	}
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		for _, p := range profiles {
			var prof kubeflowv1.Profile
			if err := env.Client.Get(ctx, types.NamespacedName{Name: p.name}, &prof); err != nil {
				return false, err.Error()
			}
			q := plugins.FindCondition(prof.Status.Conditions, "QuotasReady")
			if q == nil || q.Status != plugins.ConditionFalse || !strings.Contains(q.Message, "above limits.cpu") {
				return false, fmt.Sprintf("Profile %s: QuotasReady %+v", p.name, q)
			}
			if rp := plugins.FindCondition(prof.Status.Conditions, rollout.ConditionRolloutPaused); rp != nil {
				return false, fmt.Sprintf("Profile %s: RolloutPaused %+v", p.name, rp)
			}
		}
		return true, ""
	})
	if got := gauge(t, "profilekit_rollout_paused"); got != 0 {
		t.Errorf("profilekit_rollout_paused = %g, want 0", got)
	}
}

// TestRolloutProgressDeadline: a batch whose Profiles neither succeed nor
// fail with the candidate (an operator paused the changed plugin on them)
// would hold the rollout forever; with progressDeadline the rollout
// pauses once the batch is that old, says which Profiles were not Ready
// and why, marks them RolloutPaused, and starts no further batch.
func TestRolloutProgressDeadline(t *testing.T) {
	n := min(*rolloutProfiles, 40)
	ctx := context.WithoutCancel(t.Context())
	prefix := "rd-" + rand.String(4)
	profiles, before, _ := stableBase(t, prefix, n)
	for _, p := range profiles {
		patch := []byte(`{"metadata":{"annotations":{"` + plugins.AnnotationPaused + `":"quotas"}}}`)
		if err := env.Client.Patch(ctx, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: p.name}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	rolloutHost(t, "rollout-deadline", "testdata/rollout/deadline.yaml", env.Config)
	var st map[string]string
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		st = rolloutState(t)
		return st["paused"] == "true", fmt.Sprintf("state %v", st)
	})
	elapsed := time.Since(start)
	t.Logf("paused %s after the start: %s", elapsed.Round(time.Millisecond), st["reason"])
	if elapsed < 10*time.Second || st["batches"] != "1" || !strings.Contains(st["reason"], "was not Ready with revision") ||
		!strings.Contains(st["reason"], "within the progress deadline 10s") || !strings.Contains(st["reason"], "Paused") {
		t.Fatalf("state %v", st)
	}
	to, _ := strconv.ParseUint(st["to"], 16, 64)
	var batch []string
	for _, p := range profiles {
		if p.key <= to {
			batch = append(batch, p.name)
		}
	}
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		for _, name := range batch {
			var p kubeflowv1.Profile
			if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			rp := plugins.FindCondition(p.Status.Conditions, rollout.ConditionRolloutPaused)
			if rp == nil || rp.Status != plugins.ConditionTrue || !strings.Contains(rp.Message, "plugin quotas was not Ready with revision") {
				return false, fmt.Sprintf("Profile %s of the batch: RolloutPaused %+v", name, rp)
			}
		}
		return true, ""
	})
	// Paused on them, the quotas stayed as they were; no later batch began.
	time.Sleep(2 * time.Second)
	if st := rolloutState(t); st["batches"] != "1" || st["paused"] != "true" {
		t.Errorf("after the pause: state %v", st)
	}
	after := rolloutQuotas(t, prefix)
	for _, p := range profiles {
		if after[p.name].cpu != before[p.name].cpu {
			t.Errorf("Profile %s: quota %v, was %v", p.name, after[p.name], before[p.name])
		}
	}
	t.Logf("%d Profiles of batch 1 marked RolloutPaused; no batch after it", len(batch))
}
