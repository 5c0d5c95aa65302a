package blobcsi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

// The hostile suite, grants and deletions: restarts at the worst moment, bad
// grants documents at start and later, outages, the deletion cap across a
// restart (containers are in hostile_containers_test.go). Each test says
// what must exist afterwards in the API server and in Azurite.

// newShard returns the labels of one test's Profiles, which every host the
// test starts (a restart is a new host) serves.
func newShard() map[string]string { return map[string]string{"test": strings.ToLower(rand.String(6))} }

// sharedDoc grants the namespaces of team census read access to buckets.
func sharedDoc(ns []string, buckets ...string) grantsDoc {
	d := grantsDoc{Classifications: []string{"unclassified"}, Teams: map[string][]string{"census": ns},
		Buckets: map[string]map[string]any{}}
	for _, b := range buckets {
		d.Buckets[b] = map[string]any{"classification": "unclassified", "readers": []string{"census"}, "spn": "sp"}
	}
	return d
}

// volumesOf returns the Profile's claims and PersistentVolumes that exist and
// are not being deleted: claim name -> PV name.
func volumesOf(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, c := range claims(t, ns) {
		if c.DeletionTimestamp != nil {
			continue
		}
		v, err := pv(t, c.Spec.VolumeName)
		if err != nil || v.DeletionTimestamp != nil {
			out[name] = "<gone>"
			continue
		}
		out[name] = v.Name
	}
	return out
}

// waitVolumes waits up to d until the Profile's volumes are want.
func waitVolumes(t *testing.T, ns string, want map[string]string, d time.Duration) {
	t.Helper()
	testhost.Eventually(t, d, func() (bool, string) {
		got := volumesOf(t, ns)
		return cmp.Equal(want, got), cmp.Diff(want, got)
	})
}

// keptFor checks, for a while, that the Profile's volumes stay as they are.
func keptFor(t *testing.T, d time.Duration, ns string, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if got := volumesOf(t, ns); !cmp.Equal(want, got) {
			t.Fatalf("volumes of %s changed (-want +got):\n%s", ns, cmp.Diff(want, got))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sharedVolumes(ns string, buckets ...string) map[string]string {
	out := map[string]string{"standard": ns + ".standard"}
	for _, b := range buckets {
		out[b] = ns + "." + b
	}
	return out
}

// TestRestartWithBadGrantsDeletesNothing: a host that restarts while the
// grants source serves a document that withdraws every grant ({} from the
// gateway, an empty list), a malformed one, or none at all keeps every
// volume, and the condition says why.
func TestRestartWithBadGrantsDeletesNothing(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	buckets := []string{"census-1", "census-2", "census-3"}
	good := sharedDoc([]string{a}, buckets...)
	putGrants(t, good)
	shard := newShard()
	cfg := hostConfig(t, map[string]any{"maxVolumeDeletes": 100})
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	want := sharedVolumes(a, buckets...)
	t.Run("first run", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		waitVolumes(t, a, want, time.Minute)
		testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	})

	for _, c := range []struct {
		name   string
		serve  func(t *testing.T)
		reason string
	}{{
		name: "every grant withdrawn",
		serve: func(t *testing.T) {
			putGrants(t, grantsDoc{Classifications: []string{"unclassified"}, Teams: good.Teams})
		},
		reason: "DropTooLarge",
	}, {
		name: "malformed",
		serve: func(t *testing.T) {
			bad := sharedDoc([]string{a}, "Census_1")
			putGrants(t, bad)
		},
		reason: "Malformed",
	}, {
		name: "undefined",
		serve: func(t *testing.T) {
			putGrants(t, grantsDoc{Teams: good.Teams})
		},
		reason: "Undefined",
	}} {
		t.Run("restart with "+c.name, func(t *testing.T) {
			c.serve(t)
			startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
			keptFor(t, 5*time.Second, a, want)
			cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, c.reason)
			if !strings.HasPrefix(cond.Message, blobcsi.ReasonGrantsNotSynced) {
				t.Errorf("condition %q does not lead with %s", cond.Message, blobcsi.ReasonGrantsNotSynced)
			}
			t.Logf("condition: %s", cond.Message)
			// The good document comes back: the source syncs, nothing changes.
			putGrants(t, good)
			testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
			keptFor(t, time.Second, a, want)
		})
	}
}

// TestRestartWithOPADownDeletesNothing: a host that starts while the OPA
// gateway is down keeps every volume and says why; once OPA answers, the
// Profile is ready again with nothing changed.
func TestRestartWithOPADownDeletesNothing(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	buckets := []string{"census-1", "census-2"}
	good := sharedDoc([]string{a}, buckets...)
	putGrants(t, good)
	shard := newShard()
	cfg := hostConfig(t, nil)
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	want := sharedVolumes(a, buckets...)
	t.Run("first run", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		waitVolumes(t, a, want, time.Minute)
	})
	if err := serversOf(t).opa.Stop(); err != nil {
		t.Fatal(err)
	}
	started := false
	t.Cleanup(func() {
		if !started {
			_ = serversOf(t).opa.Start()
		}
	})
	startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
	keptFor(t, 3*time.Second, a, want)
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "Unreachable")
	if !strings.HasPrefix(cond.Message, blobcsi.ReasonGrantsNotSynced) || strings.Contains(cond.Message, "<nil>") {
		t.Errorf("condition %q: want it to lead with %s and say why", cond.Message, blobcsi.ReasonGrantsNotSynced)
	}
	t.Logf("condition while OPA is down: %s", cond.Message)
	if err := serversOf(t).opa.Start(); err != nil {
		t.Fatal(err)
	}
	started = true
	putGrants(t, good)
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	keptFor(t, time.Second, a, want)
}

// TestRestartWithConfigMapSourceDeleted: a host that starts after the
// ConfigMap of its grants was deleted keeps every volume and says why.
func TestRestartWithConfigMapSourceDeleted(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	cmName := unique("grants")
	list := func(buckets ...string) string {
		var entries []string
		for _, b := range buckets {
			entries = append(entries, fmt.Sprintf(`{"bucketName":%q,"readers":[%q],"spn":"sp"}`, b, a))
		}
		return "[" + strings.Join(entries, ",") + "]"
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: systemNS},
		Data: map[string]string{"unclassified": list("census-1", "census-2")}}
	if err := env.Client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	cfg := configMapSourceConfig(t, cmName)
	shard := newShard()
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	want := sharedVolumes(a, "census-1", "census-2")
	t.Run("first run", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		waitVolumes(t, a, want, time.Minute)
	})
	if err := env.Client.Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
	keptFor(t, 3*time.Second, a, want)
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "Missing")
	if !strings.HasPrefix(cond.Message, blobcsi.ReasonGrantsNotSynced) || !strings.Contains(cond.Message, cmName) {
		t.Errorf("condition %q: want it to lead with %s and name the ConfigMap", cond.Message, blobcsi.ReasonGrantsNotSynced)
	}
	t.Logf("condition: %s", cond.Message)
}

// configMapSourceConfig is hostConfig with a ConfigMap grants source.
func configMapSourceConfig(t *testing.T, name string) []byte {
	t.Helper()
	var cfg map[string]any
	_ = json.Unmarshal(hostConfig(t, nil), &cfg)
	cfg["grantSources"] = []any{map[string]any{"name": "cm-" + name, "instance": "standard",
		"configMap": map[string]any{"namespace": systemNS, "name": name}}}
	b, _ := json.Marshal(cfg)
	return b
}

// TestRestartBetweenGrantChanges: after a restart the drop guard compares
// the first document with the volumes in the cluster, so a change that
// withdraws most of them is refused, and changes within the share are taken.
func TestRestartBetweenGrantChanges(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	four := []string{"census-1", "census-2", "census-3", "census-4"}
	putGrants(t, sharedDoc([]string{a}, four...))
	shard := newShard()
	cfg := hostConfig(t, map[string]any{"maxVolumeDeletes": 100})
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	t.Run("first run", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		want := sharedVolumes(a, four...)
		waitVolumes(t, a, want, time.Minute)
	})
	// While the host is down the gateway withdraws three of four buckets.
	putGrants(t, sharedDoc([]string{a}, four[:1]...))
	startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
	keptFor(t, 3*time.Second, a, sharedVolumes(a, four...))
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "withdraws 3 of 4 grants")
	t.Logf("condition: %s", cond.Message)
	// Two of four is within the share: taken, and only those two go.
	putGrants(t, sharedDoc([]string{a}, four[:2]...))
	want := sharedVolumes(a, four[:2]...)
	waitVolumes(t, a, want, time.Minute)
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
}

// TestVolumeDeleteCapSurvivesRestart: deletions made before a restart still
// count against the cluster-wide cap after it.
func TestVolumeDeleteCapSurvivesRestart(t *testing.T) {
	t.Parallel()
	a, b := unique("team-a"), unique("team-b")
	doc := sharedDoc([]string{a, b}, "census-1", "census-2")
	putGrants(t, doc)
	// Three volume deletions per hour; the grants source may withdraw
	// anything, so that only the cap holds.
	cfg := hostConfigWithDrop(t, map[string]any{"maxVolumeDeletes": 3, "deleteWindow": "1h"}, 1)
	shard := newShard()
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	testhost.NewProfile(t, env.Client, b, shard, blobPlugin())
	t.Run("first run deletes two volumes", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		for _, n := range []string{a, b} {
			want := sharedVolumes(n, "census-1", "census-2")
			waitVolumes(t, n, want, time.Minute)
		}
		putGrants(t, sharedDoc([]string{a, b}, "census-2"))
		for _, n := range []string{a, b} {
			want := sharedVolumes(n, "census-2")
			waitVolumes(t, n, want, time.Minute)
		}
	})
	// Two more after the restart would make four within the hour: one
	// Profile's goes, the other's is held.
	putGrants(t, sharedDoc([]string{a, b}))
	startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
	held := heldProfiles(t, 1, a, b)
	time.Sleep(2 * time.Second)
	left := len(volumesOf(t, a)) + len(volumesOf(t, b))
	if left != 3 {
		t.Errorf("volumes left = %d, want 3 (2 standard + 1 held): %v %v", left, volumesOf(t, a), volumesOf(t, b))
	}
	t.Logf("held after the restart: %v", held)
}

// TestStaleClaimsCountOnce: a pass whose cache has not yet seen the
// deletion of a claim that the pass before it made does not count that
// claim against the cluster-wide cap again.
func TestStaleClaimsCountOnce(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	putGrants(t, sharedDoc([]string{a}, "census-1", "census-2"))
	cfg := hostConfigWithDrop(t, map[string]any{"maxVolumeDeletes": 2, "deleteWindow": "1h"}, 1)
	h := start(t, cfg, reconcilers.WithResync(time.Hour))
	h.applies.lagClaims()
	h.profile(t, a, blobPlugin())
	waitVolumes(t, a, sharedVolumes(a, "census-1", "census-2"), time.Minute)

	putGrants(t, sharedDoc([]string{a}, "census-2"))
	waitVolumes(t, a, sharedVolumes(a, "census-2"), time.Minute)
	// Every pass after the deletion read the deleted claim once more.
	time.Sleep(2 * time.Second)
	if got := len(deletesRecorded(t, cfg)); got != 1 {
		t.Errorf("the deletion record counts %d deletions, want 1", got)
	}
	// One deletion is left in the window: census-2's withdrawal goes.
	putGrants(t, sharedDoc([]string{a}))
	waitVolumes(t, a, sharedVolumes(a), time.Minute)
}

// TestClaimReadFailingHoldsTheDeletion: while the reads that confirm a
// claim before its deletion fail, the withdrawn volume stays, nothing is
// counted against the allowance, and the condition says why; once the
// reads work again, the volume goes and is counted once. So also when the
// cache has not seen the claim yet (behind its creation) and shows the
// volume alone: the claim the volume is bound to is read from the API
// server, and goes first, counted.
func TestClaimReadFailingHoldsTheDeletion(t *testing.T) {
	t.Parallel()
	for _, unseen := range []bool{false, true} {
		t.Run(fmt.Sprintf("claim unseen by the cache %v", unseen), func(t *testing.T) {
			t.Parallel()
			a := unique("team-a")
			putGrants(t, sharedDoc([]string{a}, "census-1", "census-2"))
			cfg := hostConfigWithDrop(t, map[string]any{"maxVolumeDeletes": 2, "deleteWindow": "1h"}, 1)
			h := start(t, cfg, reconcilers.WithResync(time.Hour))
			h.profile(t, a, blobPlugin())
			both := sharedVolumes(a, "census-1", "census-2")
			waitVolumes(t, a, both, time.Minute)

			if unseen {
				h.applies.hideClaims()
			}
			h.applies.failClaims.Store(true)
			putGrants(t, sharedDoc([]string{a}, "census-2"))
			cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, errClaimRead.Error())
			t.Logf("while claims cannot be read: %s", cond.Message)
			keptFor(t, 2*time.Second, a, both) // passes are retried meanwhile
			if got := len(deletesRecorded(t, cfg)); got != 0 {
				t.Errorf("the deletion record counts %d deletions while nothing was deleted, want 0", got)
			}

			h.applies.failClaims.Store(false)
			waitVolumes(t, a, sharedVolumes(a, "census-2"), time.Minute)
			if got := len(deletesRecorded(t, cfg)); got != 1 {
				t.Errorf("the deletion record counts %d deletions, want 1", got)
			}
		})
	}
}

// deletesRecorded returns the volume deletions the record of cfg holds,
// none when there is no record yet.
func deletesRecorded(t *testing.T, cfg []byte) []time.Time {
	t.Helper()
	var c struct {
		DeleteRecord struct{ Name string } `json:"deleteRecord"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: systemNS, Name: c.DeleteRecord.Name}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	for _, v := range cm.Data {
		if err := json.Unmarshal([]byte(v), &times); err != nil {
			t.Fatalf("record %s: %v", c.DeleteRecord.Name, err)
		}
	}
	return times
}
