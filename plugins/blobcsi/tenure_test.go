package blobcsi_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestSharedGrantDoesNotChangeHands: the grants source gives the shared
// bucket census to a team's namespace, and alice's Profile of that name
// mounts it. Her Profile is deleted (retention Retain) before the platform
// withdraws the grant, and mallory registers the name: mallory's Profile is
// a Conflict and her namespace mounts neither the shared bucket nor alice's
// container, before and after the host restarts, also once her tenant has
// made claims of those names itself; alice coming back mounts the shared
// bucket and her own container again (it carries her earlier Profile's
// UID, which her tenure of the name proves hers); after an administrator
// releases the name, mallory's Profile mounts the shared bucket.
//
// It runs alone: the count of passes that says the restarted host passed
// over the Profile is the process's, which other tests would move.
func TestSharedGrantDoesNotChangeHands(t *testing.T) {
	name := unique("blob-tenure")
	putGrants(t, sharedDoc([]string{name}, "census"))
	shard := newShard()
	cfg := hostConfig(t, nil)
	opts := []reconcilers.Option{reconcilers.WithResync(time.Hour), reconcilers.WithRetention(plugins.RetentionRetain)}
	// The namespace outlives the Profiles of this test, as Kubeflow's
	// registration may meet one being deleted.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	profileOf := func(owner string) {
		testhost.ProfileOf(t, env.Client, name, owner, blobPlugin())
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Labels = shard })
	}
	// Whatever the new owner gets of the bucket or of alice's container.
	nothing := func(st *testing.T, when string) {
		st.Helper()
		if m := mounts(st, name); len(m) > 0 {
			st.Errorf("%s, mallory's namespace mounts %v", when, m)
		}
	}

	t.Run("first host", func(st *testing.T) {
		startShard(st, shard, cfg, opts...)
		profileOf(testhost.Alice)
		waitVolumes(st, name, sharedVolumes(name, "census"), time.Minute)
		testhost.WaitCondition(st, env.Client, name, condType, plugins.ConditionTrue, "")
		st.Logf("alice's namespace mounts %v", mounts(st, name))
		testhost.DeleteProfile(st, env.Client, name, time.Minute)
		if !slices.Contains(containers(st), name) {
			st.Fatalf("alice's container went with her Profile under retention Retain: %v", containers(st))
		}

		profileOf(testhost.Mallory)
		start := time.Now()
		cond := testhost.WaitTenureConflict(st, env.Client, name, condType)
		st.Logf("mallory's Profile after %v: %s=%s %s", time.Since(start).Round(100*time.Millisecond), condType, cond.Status, cond.Message)
		// The grant still names the namespace: long enough for a pass to
		// have made the claim were it going to.
		time.Sleep(2 * time.Second)
		nothing(st, "with the grant not withdrawn")
	})

	t.Run("after a restart", func(st *testing.T) {
		before := testhost.Reconciles(st, blobcsi.Kind)
		startShard(st, shard, cfg, opts...)
		testhost.Eventually(st, time.Minute, func() (bool, string) {
			return testhost.Reconciles(st, blobcsi.Kind) > before, "the new host has not passed over the Profile"
		})
		testhost.WaitTenureConflict(st, env.Client, name, condType)
		// Mallory's tenant makes the claims the plugin would have, with
		// the plugin's labels: the host must neither bind nor fill them.
		tenant := testhost.Tenant(st, env, name)
		for _, claim := range []string{"census", "standard"} {
			forged := &corev1.PersistentVolumeClaim{}
			forged.Name, forged.Namespace = claim, name
			forged.Labels = plugins.OwnershipLabels(blobcsi.Kind, name)
			forged.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
			forged.Spec.StorageClassName = new(string)
			forged.Spec.VolumeName = name + "." + claim
			forged.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("50Gi")}
			if err := tenant.Create(st.Context(), forged); err != nil {
				st.Fatalf("the tenant's claim %s: %v", claim, err)
			}
		}
		testhost.UpdateProfile(st, env.Client, name, func(p *kubeflowv1.Profile) {
			p.Annotations = map[string]string{plugins.AnnotationReverify: time.Now().Format(time.RFC3339Nano)}
		})
		time.Sleep(2 * time.Second)
		testhost.WaitTenureConflict(st, env.Client, name, condType)
		nothing(st, "after a restart and the tenant's claims")
		if err := tenantClaimsGone(st, name); err != nil {
			st.Fatal(err)
		}
		testhost.DeleteProfile(st, env.Client, name, time.Minute)

		profileOf(testhost.Alice)
		waitMounts(st, name, "census", name)
		cond := testhost.WaitCondition(st, env.Client, name, condType, plugins.ConditionTrue, "")
		st.Logf("alice back: mounts %v; %s=%s %s", mounts(st, name), condType, cond.Status, cond.Message)
		testhost.DeleteProfile(st, env.Client, name, time.Minute)

		testhost.ReleaseName(st, env.Client, name)
		profileOf(testhost.Mallory)
		waitMounts(st, name, "census")
		cond = testhost.CurrentCondition(st, env.Client, name, condType)
		st.Logf("mallory after the release: mounts %v; %s=%s %s", mounts(st, name), condType, cond.Status, cond.Message)
	})
}

// mounts returns the containers that the claims of namespace ns, and the
// PersistentVolumes that name a claim there, mount: claim or PV -> container.
func mounts(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var pvs corev1.PersistentVolumeList
	if err := env.Client.List(t.Context(), &pvs); err != nil {
		t.Fatal(err)
	}
	byName := map[string]corev1.PersistentVolume{}
	for _, v := range pvs.Items {
		byName[v.Name] = v
		if ref := v.Spec.ClaimRef; ref != nil && ref.Namespace == ns && v.DeletionTimestamp == nil && v.Spec.CSI != nil {
			out["pv/"+v.Name] = v.Spec.CSI.VolumeAttributes["containerName"]
		}
	}
	for n, c := range claims(t, ns) {
		v, ok := byName[c.Spec.VolumeName]
		if c.DeletionTimestamp != nil || !ok || v.Spec.CSI == nil || c.Status.Phase != corev1.ClaimBound {
			continue
		}
		out["claim/"+n] = v.Spec.CSI.VolumeAttributes["containerName"]
	}
	return out
}

// waitMounts waits until a claim of ns is bound to a PV that mounts each
// container.
func waitMounts(t *testing.T, ns string, containers ...string) {
	t.Helper()
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		m := mounts(t, ns)
		got := map[string]bool{}
		for k, c := range m {
			if strings.HasPrefix(k, "claim/") {
				got[c] = true
			}
		}
		for _, c := range containers {
			if !got[c] {
				return false, "mounts: " + fmtMounts(m)
			}
		}
		return true, ""
	})
}

func fmtMounts(m map[string]string) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s += k + "=" + m[k] + " "
	}
	return s
}

// tenantClaimsGone deletes the claims the tenant made, as the tenant would
// to make room, so that the Profiles after mallory's get the plugin's own.
func tenantClaimsGone(t *testing.T, ns string) error {
	t.Helper()
	for n := range claims(t, ns) {
		c := &corev1.PersistentVolumeClaim{}
		c.Name, c.Namespace = n, ns
		if err := client.IgnoreNotFound(env.Client.Delete(t.Context(), c)); err != nil {
			return err
		}
	}
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		return len(claims(t, ns)) == 0, "claims left: " + fmtMounts(liveClaims(t, ns))
	})
	return nil
}
