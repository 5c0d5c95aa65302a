package blobcsi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

// The hostile suite, containers: the storage account is shared, so names
// must not meet and only proven containers are touched.

// azureContainer returns a client of one container in Azurite, with the
// account's key: what another tenant or a person would use.
func azureContainer(t *testing.T, name string) *container.Client {
	t.Helper()
	az := serversOf(t).azurite
	cred, err := service.NewSharedKeyCredential(az.Account, az.Key)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.NewClientWithSharedKeyCredential(az.BlobURL+"/", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	return svc.NewContainerClient(name)
}

// foreignContainer creates a container with a blob and metadata of its own,
// as other software sharing the account would.
func foreignContainer(t *testing.T, name string, md map[string]*string) {
	t.Helper()
	cc := azureContainer(t, name)
	if _, err := cc.Create(t.Context(), &container.CreateOptions{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewBlockBlobClient("data.csv").UploadBuffer(t.Context(), []byte("a,b\n1,2\n"), nil); err != nil {
		t.Fatal(err)
	}
}

// metadataOf returns a container's metadata with lower-case keys, or nil
// when it does not exist.
func metadataOf(t *testing.T, name string) map[string]string {
	t.Helper()
	props, err := azureContainer(t, name).GetProperties(t.Context(), nil)
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range props.Metadata {
		out[strings.ToLower(k)] = *v
	}
	return out
}

func hasBlob(t *testing.T, name, blob string) bool {
	t.Helper()
	_, err := azureContainer(t, name).NewBlobClient(blob).GetProperties(t.Context(), nil)
	return err == nil
}

func profileUID(t *testing.T, name string) string {
	t.Helper()
	var p kubeflowv1.Profile
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return string(p.UID)
}

// TestForeignContainerIsAConflict: a container that exists at a Profile's
// container name without profilekit's proof is named on the condition, is
// neither written to nor mounted nor deleted (retention Delete included);
// adoptContainers takes it over.
func TestForeignContainerIsAConflict(t *testing.T) {
	t.Parallel()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	a := unique("team-a")
	foreignMD := map[string]*string{"owner": to.Ptr("etl-pipeline")}
	foreignContainer(t, a, foreignMD)
	shard := newShard()
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin("standard", "protected-b"))

	t.Run("conflict", func(t *testing.T) {
		startShard(t, shard, hostConfig(t, nil), reconcilers.WithResync(time.Hour), reconcilers.WithRetention(plugins.RetentionDelete))
		cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, plugins.ReasonConflict)
		if !strings.Contains(cond.Message, "container "+a) {
			t.Errorf("condition %q does not name the container", cond.Message)
		}
		t.Logf("condition: %s", cond.Message)
		time.Sleep(2 * time.Second)
		if got := liveClaims(t, a); len(got) != 0 {
			t.Errorf("claims = %v, want none: the foreign container must not be mounted", got)
		}
		if _, err := pv(t, a+".standard"); !apierrors.IsNotFound(err) {
			t.Errorf("PV %s-standard: %v, want none", a, err)
		}
		if md := metadataOf(t, a); !cmp.Equal(md, map[string]string{"owner": "etl-pipeline"}) {
			t.Errorf("foreign container's metadata = %v, want it untouched", md)
		}
		// The Profile is deleted under retention Delete: the foreign
		// container stays, with its data.
		if err := env.Client.Delete(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: a}}); err != nil {
			t.Fatal(err)
		}
		testhost.Eventually(t, time.Minute, func() (bool, string) {
			var p kubeflowv1.Profile
			err := env.Client.Get(t.Context(), client.ObjectKey{Name: a}, &p)
			return apierrors.IsNotFound(err), fmt.Sprintf("Profile: %v, finalizers %v", err, p.Finalizers)
		})
	})
	if md := metadataOf(t, a); md == nil || !hasBlob(t, a, "data.csv") || md[strings.ToLower(blobcsi.MetaProfileUID)] != "" {
		t.Errorf("foreign container after the Profile's deletion: metadata %v, blob kept %v; want it untouched", md, hasBlob(t, a, "data.csv"))
	}

	t.Run("adoptContainers takes it over", func(t *testing.T) {
		b := unique("team-b")
		foreignContainer(t, b, foreignMD)
		shard := newShard()
		testhost.NewProfile(t, env.Client, b, shard, blobPlugin("standard"))
		var cfg map[string]any
		_ = json.Unmarshal(hostConfig(t, nil), &cfg)
		cfg["storage"].([]any)[0].(map[string]any)["adoptContainers"] = true
		raw, _ := json.Marshal(cfg)
		startShard(t, shard, raw, reconcilers.WithResync(time.Hour))
		waitClaims(t, b, map[string]string{"standard": "ReadWriteMany"})
		testhost.WaitCondition(t, env.Client, b, condType, plugins.ConditionTrue, "")
		md := metadataOf(t, b)
		want := map[string]string{"owner": "etl-pipeline", blobcsi.MetaPlugin: blobcsi.Kind, blobcsi.MetaProfile: b, blobcsi.MetaProfileUID: profileUID(t, b)}
		if diff := cmp.Diff(want, md); diff != "" {
			t.Errorf("adopted container's metadata (-want +got):\n%s", diff)
		}
	})
}

// TestCraftedContainerNamesGetTheirOwnContainers: a Profile named like
// another Profile's hashed container name (the collision the earlier
// mapping allowed) gets a container of its own, and each carries its own
// Profile's proof.
func TestCraftedContainerNamesGetTheirOwnContainers(t *testing.T) {
	t.Parallel()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	short := "z" + strings.ToLower(rand.String(1))
	sum := sha256.Sum256([]byte(short))
	crafted := short + "-" + hex.EncodeToString(sum[:4])
	h := start(t, hostConfig(t, nil), reconcilers.WithResync(time.Hour))
	h.profile(t, short, blobPlugin("standard"))
	h.profile(t, crafted, blobPlugin("standard"))
	for _, n := range []string{short, crafted} {
		waitClaims(t, n, map[string]string{"standard": "ReadWriteMany"})
		testhost.WaitCondition(t, env.Client, n, condType, plugins.ConditionTrue, "")
	}
	names := map[string]string{}
	for _, n := range []string{short, crafted} {
		v, err := pv(t, n+".standard")
		if err != nil {
			t.Fatal(err)
		}
		c := v.Spec.CSI.VolumeAttributes["containerName"]
		if other, dup := names[c]; dup {
			t.Fatalf("Profiles %s and %s mount one container %s", other, n, c)
		}
		names[c] = n
		if md := metadataOf(t, c); md[strings.ToLower(blobcsi.MetaProfileUID)] != profileUID(t, n) {
			t.Errorf("container %s of %s carries %v, want the Profile's UID", c, n, md)
		}
	}
	t.Logf("containers: %v", names)
}

// TestProfileDeletionWhileAzuriteIsDown: the finalizer holds the Profile
// while its containers cannot be deleted, the condition says so, and the
// deletion completes, containers gone, once Azurite is back.
func TestProfileDeletionWhileAzuriteIsDown(t *testing.T) {
	t.Parallel()
	az := ownAzurite(t)
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	h := start(t, hostConfig(t, nil), reconcilers.WithResync(time.Hour), reconcilers.WithRetention(plugins.RetentionDelete))
	a := unique("team-a")
	h.profile(t, a, blobPlugin("standard"))
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany"})
	if metadataOf(t, a) == nil {
		t.Fatalf("container %s missing", a)
	}
	if err := az.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = az.Start()
		}
	})
	if err := env.Client.Delete(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: a}}); err != nil {
		t.Fatal(err)
	}
	// The volumes go first (kube-controller-manager lets go of them, in
	// seconds or more on a busy machine); then the revoke waits for Azure,
	// with the Profile held all along.
	var p kubeflowv1.Profile
	testhost.Eventually(t, 60*time.Second, func() (bool, string) {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: a}, &p); err != nil || !slices.Contains(p.Finalizers, "profilekit.dev/blobcsi") {
			t.Fatalf("Profile while Azurite is down: %v, finalizers %v; want it held by profilekit.dev/blobcsi", err, p.Finalizers)
		}
		c := plugins.FindCondition(p.Status.Conditions, condType)
		return c != nil && c.Status == plugins.ConditionFalse && strings.Contains(c.Message, blobcsi.SystemAzureBlob),
			fmt.Sprintf("condition while the deletion waits for Azure = %+v, want False naming %s", c, blobcsi.SystemAzureBlob)
	})
	if err := az.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	testhost.Eventually(t, 60*time.Second, func() (bool, string) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Name: a}, &p)
		return apierrors.IsNotFound(err), fmt.Sprintf("Profile: %v, finalizers %v", err, p.Finalizers)
	})
	if md := metadataOf(t, a); md != nil {
		t.Errorf("container %s still exists after the Profile's deletion with retention Delete: %v", a, md)
	}
}

// TestContainersOfEarlierVersionsAreStamped: a container that an earlier
// version made (no proof in its metadata, but the host's outside-state
// record names it as made) gets the proof and stays mounted, with its data.
func TestContainersOfEarlierVersionsAreStamped(t *testing.T) {
	t.Parallel()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	a := unique("team-a")
	shard := newShard()
	p := testhost.NewProfile(t, env.Client, a, shard, blobPlugin("standard"))
	foreignContainer(t, a, nil)
	testhost.WriteRecord(t, env.Client, blobcsi.Kind, p, `{"container/standard":{"hash":"0123456789abcdef01234567","at":"2026-01-01T00:00:00Z"}}`)
	startShard(t, shard, hostConfig(t, nil), reconcilers.WithResync(time.Hour))
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany"})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	want := map[string]string{blobcsi.MetaPlugin: blobcsi.Kind, blobcsi.MetaProfile: a, blobcsi.MetaProfileUID: profileUID(t, a)}
	if diff := cmp.Diff(want, metadataOf(t, a)); diff != "" || !hasBlob(t, a, "data.csv") {
		t.Errorf("container of the earlier version: metadata (-want +got):\n%s; blob kept %v", diff, hasBlob(t, a, "data.csv"))
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		var cm corev1.ConfigMap
		if err := env.Client.Get(t.Context(), testhost.RecordKey(blobcsi.Kind, p), &cm); err != nil {
			return false, err.Error()
		}
		raw := cm.Data["state.json"]
		return strings.Contains(raw, `"owned-container/standard"`) && !strings.Contains(raw, `"container/standard"`), "record: " + raw
	})
	// The stamping is one pass that succeeds, not a failure retried: no
	// Warning Event on the way (Events are sent a moment after they are
	// recorded).
	time.Sleep(time.Second)
	for _, e := range testhost.Events(t, env.Client, a) {
		if strings.Contains(e, " Warning ") {
			t.Errorf("stamping the container of the earlier version: %s", e)
		}
	}
}

// TestTenantForgedRecordClaimsNoContainer: a tenant, with Kubeflow's rights
// in its namespace, writes a record of the earlier form there under the
// plugin's own field manager, naming the container at its Profile's name
// (made by someone else, without proof) as made by an earlier version. The
// host never reads it: the container is a Conflict, is not stamped with
// the tenant's proof, not mounted, and not deleted with the Profile under
// retention Delete. The tenant cannot reach the host's record at all.
func TestTenantForgedRecordClaimsNoContainer(t *testing.T) {
	t.Parallel()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	a := unique("team-a")
	shard := newShard()
	p := testhost.NewProfile(t, env.Client, a, shard)
	foreignContainer(t, a, map[string]*string{"owner": to.Ptr("etl-pipeline")})
	tenant := testhost.Tenant(t, env, a)
	testhost.ForgeRecord(t, tenant, blobcsi.Kind, a, `{"container/standard":{"hash":"0123456789abcdef01234567","at":"2026-01-01T00:00:00Z"}}`)
	testhost.UpdateProfile(t, env.Client, a, func(p *kubeflowv1.Profile) { p.Spec.Plugins = []kubeflowv1.Plugin{blobPlugin("standard")} })
	startShard(t, shard, hostConfig(t, nil), reconcilers.WithResync(time.Hour), reconcilers.WithRetention(plugins.RetentionDelete))
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, plugins.ReasonConflict)
	t.Logf("condition: %s", cond.Message)
	if md := metadataOf(t, a); !cmp.Equal(md, map[string]string{"owner": "etl-pipeline"}) {
		t.Errorf("the container named by the forged record: metadata %v, want it untouched", md)
	}
	if got := liveClaims(t, a); len(got) != 0 {
		t.Errorf("claims = %v, want none: the container must not be mounted", got)
	}
	var record corev1.ConfigMap
	key := testhost.RecordKey(blobcsi.Kind, p)
	if err := tenant.Get(t.Context(), key, &record); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant reads the host's record: %v, want Forbidden", err)
	}
	if err := tenant.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant writes the host's record: %v, want Forbidden", err)
	}
	if err := env.Client.Delete(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: a}}); err != nil {
		t.Fatal(err)
	}
	testhost.WaitProfileGone(t, env.Client, a, time.Minute)
	if md := metadataOf(t, a); md == nil || !hasBlob(t, a, "data.csv") {
		t.Errorf("the container after the Profile's deletion under retention Delete: metadata %v, blob kept %v; want it untouched", md, hasBlob(t, a, "data.csv"))
	}
}

// TestReplacedContainerIsNotDeleted: a Profile's container that someone
// replaced by one of their own (deleted, and made again under the name) is
// not deleted with the Profile, even with retention Delete.
func TestReplacedContainerIsNotDeleted(t *testing.T) {
	t.Parallel()
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	h := start(t, hostConfig(t, nil), reconcilers.WithResync(time.Hour), reconcilers.WithRetention(plugins.RetentionDelete))
	a := unique("team-a")
	h.profile(t, a, blobPlugin("standard"))
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany"})
	if _, err := azureContainer(t, a).Delete(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		_, err := azureContainer(t, a).Create(t.Context(), &container.CreateOptions{Metadata: map[string]*string{"owner": to.Ptr("someone-else")}})
		return err == nil, fmt.Sprint(err)
	})
	if err := env.Client.Delete(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: a}}); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, time.Minute, func() (bool, string) {
		var p kubeflowv1.Profile
		err := env.Client.Get(t.Context(), client.ObjectKey{Name: a}, &p)
		return apierrors.IsNotFound(err), fmt.Sprintf("Profile: %v, finalizers %v", err, p.Finalizers)
	})
	if md := metadataOf(t, a); md["owner"] != "someone-else" {
		t.Errorf("the replacing container is gone or changed: %v", md)
	}
	want := []string{serversOf(t).azurite.Account + "/" + a + " " + string(plugins.Skipped)}
	if got := h.applies.revokedContainers(a); !cmp.Equal(got, want) {
		t.Errorf("the revoke reported the container as %q, want %q: kept, not ours", got, want)
	}
}
