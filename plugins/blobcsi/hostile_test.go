package blobcsi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
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
	a := unique("team-a")
	buckets := []string{"census-1", "census-2", "census-3"}
	good := sharedDoc([]string{a}, buckets...)
	putGrants(t, "storage", good)
	shard := newShard()
	cfg := hostConfig("storage", map[string]any{"maxVolumeDeletes": 100})
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	want := sharedVolumes(a, buckets...)
	t.Run("first run", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		waitVolumes(t, a, want, 30*time.Second)
		testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	})

	for _, c := range []struct {
		name   string
		serve  func(t *testing.T)
		reason string
	}{{
		name: "every grant withdrawn",
		serve: func(t *testing.T) {
			putGrants(t, "storage", grantsDoc{Classifications: []string{"unclassified"}, Teams: good.Teams})
		},
		reason: "DropTooLarge",
	}, {
		name: "malformed",
		serve: func(t *testing.T) {
			bad := sharedDoc([]string{a}, "Census_1")
			putGrants(t, "storage", bad)
		},
		reason: "Malformed",
	}, {
		name: "undefined",
		serve: func(t *testing.T) {
			putGrants(t, "storage", grantsDoc{Teams: good.Teams})
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
			putGrants(t, "storage", good)
			testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
			keptFor(t, time.Second, a, want)
		})
	}
}

// TestRestartWithOPADownDeletesNothing: a host that starts while the OPA
// gateway is down keeps every volume and says why; once OPA answers, the
// Profile is ready again with nothing changed.
func TestRestartWithOPADownDeletesNothing(t *testing.T) {
	a := unique("team-a")
	buckets := []string{"census-1", "census-2"}
	good := sharedDoc([]string{a}, buckets...)
	putGrants(t, "storage", good)
	shard := newShard()
	cfg := hostConfig("storage", nil)
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	want := sharedVolumes(a, buckets...)
	t.Run("first run", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		waitVolumes(t, a, want, 30*time.Second)
	})
	if err := opaSrv.Stop(); err != nil {
		t.Fatal(err)
	}
	started := false
	t.Cleanup(func() {
		if !started {
			_ = opaSrv.Start()
		}
	})
	startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
	keptFor(t, 3*time.Second, a, want)
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "Unreachable")
	if !strings.HasPrefix(cond.Message, blobcsi.ReasonGrantsNotSynced) || strings.Contains(cond.Message, "<nil>") {
		t.Errorf("condition %q: want it to lead with %s and say why", cond.Message, blobcsi.ReasonGrantsNotSynced)
	}
	t.Logf("condition while OPA is down: %s", cond.Message)
	if err := opaSrv.Start(); err != nil {
		t.Fatal(err)
	}
	started = true
	putGrants(t, "storage", good)
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	keptFor(t, time.Second, a, want)
}

// TestRestartWithConfigMapSourceDeleted: a host that starts after the
// ConfigMap of its grants was deleted keeps every volume and says why.
func TestRestartWithConfigMapSourceDeleted(t *testing.T) {
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
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	cfg := configMapSourceConfig(cmName)
	shard := newShard()
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	want := sharedVolumes(a, "census-1", "census-2")
	t.Run("first run", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		waitVolumes(t, a, want, 30*time.Second)
	})
	if err := env.Client.Delete(context.Background(), cm); err != nil {
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
func configMapSourceConfig(name string) []byte {
	var cfg map[string]any
	_ = json.Unmarshal(hostConfig("storage", nil), &cfg)
	cfg["grantSources"] = []any{map[string]any{"name": "cm-" + name, "instance": "standard",
		"configMap": map[string]any{"namespace": systemNS, "name": name}}}
	b, _ := json.Marshal(cfg)
	return b
}

// TestRestartBetweenGrantChanges: after a restart the drop guard compares
// the first document with the volumes in the cluster, so a change that
// withdraws most of them is refused, and changes within the share are taken.
func TestRestartBetweenGrantChanges(t *testing.T) {
	a := unique("team-a")
	four := []string{"census-1", "census-2", "census-3", "census-4"}
	putGrants(t, "storage", sharedDoc([]string{a}, four...))
	shard := newShard()
	cfg := hostConfig("storage", map[string]any{"maxVolumeDeletes": 100})
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	t.Run("first run", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		want := sharedVolumes(a, four...)
		waitVolumes(t, a, want, 30*time.Second)
	})
	// While the host is down the gateway withdraws three of four buckets.
	putGrants(t, "storage", sharedDoc([]string{a}, four[:1]...))
	startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
	keptFor(t, 3*time.Second, a, sharedVolumes(a, four...))
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "withdraws 3 of 4 grants")
	t.Logf("condition: %s", cond.Message)
	// Two of four is within the share: taken, and only those two go.
	putGrants(t, "storage", sharedDoc([]string{a}, four[:2]...))
	want := sharedVolumes(a, four[:2]...)
	waitVolumes(t, a, want, 30*time.Second)
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
}

// TestVolumeDeleteCapSurvivesRestart: deletions made before a restart still
// count against the cluster-wide cap after it.
func TestVolumeDeleteCapSurvivesRestart(t *testing.T) {
	a, b := unique("team-a"), unique("team-b")
	doc := sharedDoc([]string{a, b}, "census-1", "census-2")
	putGrants(t, "storage", doc)
	// Three volume deletions per hour; the grants source may withdraw
	// anything, so that only the cap holds.
	cfg := hostConfigWithDrop(map[string]any{"maxVolumeDeletes": 3, "deleteWindow": "1h"}, 1)
	shard := newShard()
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	testhost.NewProfile(t, env.Client, b, shard, blobPlugin())
	t.Run("first run deletes two volumes", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		for _, n := range []string{a, b} {
			want := sharedVolumes(n, "census-1", "census-2")
			waitVolumes(t, n, want, 30*time.Second)
		}
		putGrants(t, "storage", sharedDoc([]string{a, b}, "census-2"))
		for _, n := range []string{a, b} {
			want := sharedVolumes(n, "census-2")
			waitVolumes(t, n, want, 30*time.Second)
		}
	})
	// Two more after the restart would make four within the hour: one
	// Profile's goes, the other's is held.
	putGrants(t, "storage", sharedDoc([]string{a, b}))
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
	a := unique("team-a")
	putGrants(t, "storage", sharedDoc([]string{a}, "census-1", "census-2"))
	cfg := hostConfigWithDrop(map[string]any{"maxVolumeDeletes": 2, "deleteWindow": "1h"}, 1)
	h := start(t, cfg, reconcilers.WithResync(time.Hour))
	h.applies.lagClaims()
	h.profile(t, a, blobPlugin())
	waitVolumes(t, a, sharedVolumes(a, "census-1", "census-2"), 30*time.Second)

	putGrants(t, "storage", sharedDoc([]string{a}, "census-2"))
	waitVolumes(t, a, sharedVolumes(a, "census-2"), 30*time.Second)
	// Every pass after the deletion read the deleted claim once more.
	time.Sleep(2 * time.Second)
	if got := len(deletesRecorded(t, cfg)); got != 1 {
		t.Errorf("the deletion record counts %d deletions, want 1", got)
	}
	// One deletion is left in the window: census-2's withdrawal goes.
	putGrants(t, "storage", sharedDoc([]string{a}))
	waitVolumes(t, a, sharedVolumes(a), 30*time.Second)
}

// TestClaimReadFailingHoldsTheDeletion: while the reads that confirm a
// claim before its deletion fail, the withdrawn volume stays, nothing is
// counted against the allowance, and the condition says why; once the
// reads work again, the volume goes and is counted once.
func TestClaimReadFailingHoldsTheDeletion(t *testing.T) {
	a := unique("team-a")
	putGrants(t, "storage", sharedDoc([]string{a}, "census-1", "census-2"))
	cfg := hostConfigWithDrop(map[string]any{"maxVolumeDeletes": 2, "deleteWindow": "1h"}, 1)
	h := start(t, cfg, reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	both := sharedVolumes(a, "census-1", "census-2")
	waitVolumes(t, a, both, 30*time.Second)

	h.applies.failClaims.Store(true)
	putGrants(t, "storage", sharedDoc([]string{a}, "census-2"))
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, errClaimRead.Error())
	keptFor(t, 2*time.Second, a, both) // passes are retried meanwhile
	if got := len(deletesRecorded(t, cfg)); got != 0 {
		t.Errorf("the deletion record counts %d deletions while nothing was deleted, want 0", got)
	}

	h.applies.failClaims.Store(false)
	waitVolumes(t, a, sharedVolumes(a, "census-2"), 30*time.Second)
	if got := len(deletesRecorded(t, cfg)); got != 1 {
		t.Errorf("the deletion record counts %d deletions, want 1", got)
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
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: systemNS, Name: c.DeleteRecord.Name}, &cm)
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

// heldProfiles waits until exactly n of the Profiles report
// VolumeDeletesHeld, and returns their conditions' messages.
func heldProfiles(t *testing.T, n int, names ...string) []string {
	t.Helper()
	var msgs []string
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		msgs = nil
		for _, name := range names {
			var p kubeflowv1.Profile
			if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			if c := plugins.FindCondition(p.Status.Conditions, condType); c != nil && strings.Contains(c.Message, blobcsi.ReasonVolumeDeletesHeld) {
				msgs = append(msgs, c.Message)
			}
		}
		return len(msgs) == n, fmt.Sprintf("%d Profiles held, want %d: %v", len(msgs), n, msgs)
	})
	return msgs
}

// TestForeignDeleteRecordHoldsEveryDeletion: a ConfigMap that is not the
// plugin's at the deletion record's name is a Conflict; it is left as it is
// and no volume is deleted, since nothing can be counted.
func TestForeignDeleteRecordHoldsEveryDeletion(t *testing.T) {
	a := unique("team-a")
	putGrants(t, "storage", sharedDoc([]string{a}, "census-1", "census-2"))
	record := unique("deletes")
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: systemNS, Name: record}, Data: map[string]string{"owner": "someone-else"}}
	if err := env.Client.Create(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	_ = json.Unmarshal(hostConfig("storage", nil), &cfg)
	cfg["deleteRecord"] = map[string]any{"name": record}
	raw, _ := json.Marshal(cfg)
	h := start(t, raw, reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	want := sharedVolumes(a, "census-1", "census-2")
	waitVolumes(t, a, want, 30*time.Second)
	putGrants(t, "storage", sharedDoc([]string{a}, "census-1"))
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, plugins.ReasonConflict)
	if !strings.Contains(cond.Message, systemNS+"/"+record) {
		t.Errorf("condition %q does not name the ConfigMap", cond.Message)
	}
	keptFor(t, 2*time.Second, a, want)
	var got corev1.ConfigMap
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(foreign), &got); err != nil || !cmp.Equal(got.Data, foreign.Data) || len(got.Labels) != 0 {
		t.Errorf("foreign ConfigMap after the pass: %v, data %v, labels %v; want it untouched", err, got.Data, got.Labels)
	}
}

// TestForgedClaimsDoNotHoldBackGrants: a tenant that makes claims with the
// plugin's labels and a grants source's name in its own namespace must not
// make the first document after a restart look like a withdrawal of most
// grants in use, which would hold back every tenant's grants: the drop
// guard counts the PersistentVolumes the plugin made, which a tenant cannot
// make, and only those bound to the very claim that exists, not to an
// earlier one of the same name.
func TestForgedClaimsDoNotHoldBackGrants(t *testing.T) {
	a := unique("team-a")
	two := []string{"census-1", "census-2"}
	putGrants(t, "storage", sharedDoc([]string{a}, two...))
	source := unique("forged")
	shard := newShard()
	cfg := hostConfigOwnSource(source)
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	want := sharedVolumes(a, two...)
	t.Run("first run", func(t *testing.T) {
		startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
		waitVolumes(t, a, want, 30*time.Second)
	})
	// While the host is down the tenant forges ten claims: with them the
	// unchanged document would withdraw 10 of 12 grants. Their names are
	// those of ten earlier claims of the plugin whose volumes were kept
	// (Released, reclaim policy Retain): a volume bound to a claim names its
	// UID, and the forged claims have others.
	ours := map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: blobcsi.Kind, blobcsi.LabelSource: source}
	for i := range 10 {
		kept := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-kept-%d", a, i), Labels: ours},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/kept"}},
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: a, Name: fmt.Sprintf("forged-%d", i), UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))},
			},
		}
		if err := env.Client.Create(context.Background(), kept); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), kept) })
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("forged-%d", i), Namespace: a, Labels: ours},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if err := env.Client.Create(context.Background(), pvc); err != nil {
			t.Fatal(err)
		}
	}
	taken := refreshes(t, source, "OK")
	startShard(t, shard, cfg, reconcilers.WithResync(time.Hour))
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		ok, refused := refreshes(t, source, "OK")-taken, refreshes(t, source, "DropTooLarge")
		return ok > 0 && refused == 0, fmt.Sprintf("after the restart %v documents taken, %v refused as too large a drop", ok, refused)
	})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	// The granted volumes stay; the forged claims, which the plugin did not
	// make, are left alone, unbound.
	for i := range 10 {
		want[fmt.Sprintf("forged-%d", i)] = "<gone>"
	}
	if got := volumesOf(t, a); !cmp.Equal(want, got) {
		t.Errorf("the tenant's claims after the restart (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// TestVolumeTakenOverUnseenByTheCacheIsNotDeleted: a withdrawn volume's
// PersistentVolume that someone took over (relabelled, to keep it) a moment
// before the pass, as the pass's cache does not show yet, is left: the
// delete carries the version the pass decided on, and a volume changed
// since is deleted only if it is still ours.
func TestVolumeTakenOverUnseenByTheCacheIsNotDeleted(t *testing.T) {
	ctx := context.Background()
	a := unique("team-a")
	putGrants(t, "storage", sharedDoc([]string{a}, "census-1", "census-2"))
	h := start(t, hostConfig("storage", map[string]any{"maxVolumeDeletes": 100}), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	waitVolumes(t, a, sharedVolumes(a, "census-1", "census-2"), 30*time.Second)

	h.applies.holdVolumes(t)
	taken, err := pv(t, a+".census-1")
	if err != nil {
		t.Fatal(err)
	}
	taken.Labels[plugins.LabelManagedBy] = "someone-else"
	if err := env.Client.Update(ctx, taken); err != nil {
		t.Fatal(err)
	}

	putGrants(t, "storage", sharedDoc([]string{a}, "census-2"))
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		_, has := claims(t, a)["census-1"]
		return !has, "the withdrawn claim census-1 is still there"
	})
	time.Sleep(time.Second) // passes retried meanwhile
	now, err := pv(t, taken.Name)
	switch {
	case err != nil:
		t.Errorf("the volume someone took over is gone: %v; want it left", err)
	case now.UID != taken.UID || now.DeletionTimestamp != nil:
		t.Errorf("the volume someone took over: uid %s (was %s), deletion %v; want it left", now.UID, taken.UID, now.DeletionTimestamp)
	default:
		// Let it go, so that no later test meets it.
		if err := env.Client.Delete(ctx, now); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	if v, err := pv(t, a+".census-2"); err != nil || v.DeletionTimestamp != nil {
		t.Errorf("the granted volume census-2: %v; want it kept", err)
	}
}
