package rollout

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
)

func batch(t *testing.T, s string) hostconfig.Batch {
	t.Helper()
	var b hostconfig.Batch
	if err := json.Unmarshal([]byte(s), &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBatchSize(t *testing.T) {
	cases := []struct {
		reason       string
		batch        string
		total        int
		size, number int
	}{
		{"5% of 1,000 is 50, in 20 batches", `"5%"`, 1000, 50, 20},
		{"a share rounds up", `"5%"`, 1010, 51, 20},
		{"a share of few Profiles is at least one", `"5%"`, 3, 1, 3},
		{"a count is a count", `50`, 1000, 50, 20},
		{"a count above the Profiles is one batch", `"2000"`, 1000, 2000, 1},
		{"100% is one batch", `"100%"`, 7, 7, 1},
		{"a fraction of a percent", `"0.5%"`, 5000, 25, 200},
		{"no Profiles, no batches", `"5%"`, 0, 1, 0},
	}
	for _, c := range cases {
		b := batch(t, c.batch)
		if got := BatchSize(b, c.total); got != c.size {
			t.Errorf("%s: BatchSize(%s, %d) = %d, want %d", c.reason, c.batch, c.total, got, c.size)
		}
		if got := Batches(b, c.total); got != c.number {
			t.Errorf("%s: Batches(%s, %d) = %d, want %d", c.reason, c.batch, c.total, got, c.number)
		}
	}
}

func TestNextTo(t *testing.T) {
	keys := []uint64{40, 10, 30, 20, 50}
	cases := []struct {
		reason  string
		from    uint64
		started bool
		size    int
		to      uint64
		left    bool
	}{
		{"the first batch takes the smallest keys", 0, false, 2, 20, true},
		{"the next batch takes those above the last", 20, true, 2, 40, true},
		{"the last batch takes what is left", 40, true, 2, 50, true},
		{"nothing left", 50, true, 2, 0, false},
		{"a key 0 is in the first batch", 0, false, 1, 10, true},
	}
	for _, c := range cases {
		to, left := NextTo(keys, c.from, c.started, c.size)
		if to != c.to || left != c.left {
			t.Errorf("%s: NextTo(from %d, %v, %d) = %d, %v; want %d, %v", c.reason, c.from, c.started, c.size, to, left, c.to, c.left)
		}
	}
}

func TestKeyIsStable(t *testing.T) {
	// The order of a rollout must survive a restart with a new build: the
	// key is FNV-1a of the UID, pinned here.
	if got, want := Key("0f7e6c1e-2b7a-4a5e-9a53-1a2b3c4d5e6f"), uint64(0xc171a5d0de11fb63); got != want {
		t.Fatalf("Key = %#x, want %#x", got, want)
	}
	if Key("a") == Key("b") {
		t.Fatal("Key must tell UIDs apart")
	}
}

func sections(cpu string) map[string]hostconfig.Plugin {
	return map[string]hostconfig.Plugin{"quotas": {Enabled: hostconfig.EnabledAll, Defaults: json.RawMessage(`{"hard":{"limits.cpu":"` + cpu + `"}}`)}}
}

func TestBegin(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	earlier := now.Add(-time.Hour)
	v1, v2, v3 := sections("2"), sections("4"), sections("1")
	r1, r2, r3 := Revision(v1), Revision(v2), Revision(v3)
	underWay := State{StableRevision: r1, Stable: v1, CandidateRevision: r2, Started: earlier, Batches: 3, From: 7, To: 9}
	paused := underWay.Pause("plugin quotas failed")
	cases := []struct {
		reason string
		kept   *State
		file   map[string]hostconfig.Plugin
		want   State
	}{
		{"a first start makes the file stable at once", nil, v1,
			State{StableRevision: r1, Stable: v1}},
		{"the stable configuration again: nothing to roll out", &State{StableRevision: r1, Stable: v1}, v1,
			State{StableRevision: r1, Stable: v1}},
		{"a changed configuration starts from the first batch", &State{StableRevision: r1, Stable: v1}, v2,
			State{StableRevision: r1, Stable: v1, CandidateRevision: r2, Started: now}},
		{"a restart mid-rollout continues where it was", &underWay, v2, underWay},
		{"a restart while paused stays paused", &paused, v2, paused},
		{"a roll back ends the rollout: every Profile gets the stable configuration", &paused, v1,
			State{StableRevision: r1, Stable: v1}},
		{"a fix is a new candidate: from the first batch again", &paused, v3,
			State{StableRevision: r1, Stable: v1, CandidateRevision: r3, Started: now}},
	}
	for _, c := range cases {
		got := Begin(c.kept, c.file, now)
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, d)
		}
	}
}

func TestStateWalk(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	v1, v2 := sections("2"), sections("4")
	s := Begin(&State{StableRevision: Revision(v1), Stable: v1}, v2, now)
	old := now.Add(-time.Hour)
	if s.Updated(5, old) || s.InBatch(5) {
		t.Fatal("before the first batch no old Profile has the candidate")
	}
	if !s.Updated(5, now.Add(time.Second)) {
		t.Fatal("a Profile created after the rollout began gets the candidate at once")
	}
	s = s.Advance(10, now)
	for _, c := range []struct {
		key              uint64
		updated, inBatch bool
	}{{0, true, true}, {10, true, true}, {11, false, false}} {
		if s.Updated(c.key, old) != c.updated || s.InBatch(c.key) != c.inBatch {
			t.Errorf("batch 1, key %d: updated %v in batch %v, want %v %v", c.key, s.Updated(c.key, old), s.InBatch(c.key), c.updated, c.inBatch)
		}
	}
	s = s.Advance(20, now.Add(time.Minute))
	if s.BatchStarted != now.Add(time.Minute) {
		t.Errorf("batch 2 started at %s, want %s", s.BatchStarted, now.Add(time.Minute))
	}
	for _, c := range []struct {
		key              uint64
		updated, inBatch bool
	}{{10, true, false}, {11, true, true}, {20, true, true}, {21, false, false}} {
		if s.Updated(c.key, old) != c.updated || s.InBatch(c.key) != c.inBatch {
			t.Errorf("batch 2, key %d: updated %v in batch %v, want %v %v", c.key, s.Updated(c.key, old), s.InBatch(c.key), c.updated, c.inBatch)
		}
	}
	done := s.Complete(v2)
	if done.Active() || done.StableRevision != Revision(v2) || !done.Updated(99, old) {
		t.Fatalf("complete: %+v", done)
	}
}

func TestStateRoundTrip(t *testing.T) {
	v1, v2 := sections("2"), sections("4")
	for _, s := range []State{
		{StableRevision: Revision(v1), Stable: v1},
		State{StableRevision: Revision(v1), Stable: v1, CandidateRevision: Revision(v2),
			Started: time.Date(2026, 11, 28, 12, 0, 0, 123456789, time.UTC), Batches: 2, From: 1 << 63, To: 1<<64 - 1,
			BatchStarted: time.Date(2026, 11, 28, 12, 5, 0, 1, time.UTC)}.Pause("plugin quotas failed"),
		// The state of an earlier version: no batchStarted.
		{StableRevision: Revision(v1), Stable: v1, CandidateRevision: Revision(v2),
			Started: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), Batches: 1, To: 7},
	} {
		cm := &corev1.ConfigMap{}
		if err := s.encode(cm, "summary"); err != nil {
			t.Fatal(err)
		}
		got, err := decode(cm)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(s, *got); d != "" {
			t.Errorf("round trip (-want +got):\n%s\n%v", d, cm.Data)
		}
		if Revision(got.Stable) != s.StableRevision {
			t.Errorf("the stable sections read back have revision %s, want %s", Revision(got.Stable), s.StableRevision)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, data := range []map[string]string{
		{},
		{keyStableRevision: "r", keyStable: "{"},
		{keyStableRevision: "r", keyStable: "{}", keyCandidateRevision: "c", keyStarted: "yesterday"},
		{keyStableRevision: "r", keyStable: "{}", keyCandidateRevision: "c", keyStarted: "2026-11-28T12:00:00Z", keyBatches: "1", keyFrom: "0", keyTo: "7", keyPaused: "false", keyBatchStarted: "soon"},
	} {
		if _, err := decode(&corev1.ConfigMap{Data: data}); err == nil {
			t.Errorf("decode(%v) took it", data)
		}
	}
}
