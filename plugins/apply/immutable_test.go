package apply_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// An object of ours whose immutable fields must change is replaced when
// nothing holds on to it but its name (an immutable ConfigMap), and
// reported, never deleted, when something does (a claim's spec).
func TestImmutableFields(t *testing.T) {
	const ns = "immutable"
	e := startCachedServer(t, ns, &corev1.ConfigMap{}, &corev1.PersistentVolumeClaim{})
	ctx := t.Context()
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: ns, UID: "p1"}}
	owns := []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
	}
	applier := func() *apply.Applier {
		return apply.New(e.client, "settings", p, owns, apply.WithScheme(e.env.Scheme), apply.WithLiveReader(e.env.Client))
	}
	frozen := func(v string) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap("frozen", ns).WithImmutable(true).WithData(map[string]string{"v": v})
	}
	claim := func(class string) *corev1ac.PersistentVolumeClaimApplyConfiguration {
		return corev1ac.PersistentVolumeClaim("data", ns).WithSpec(corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(corev1.ReadWriteOnce).WithStorageClassName(class).
			WithResources(corev1ac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")})))
	}
	if _, err := applier().Sync(ctx, frozen("1"), claim("fast")); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	var pvc corev1.PersistentVolumeClaim
	get := func(name string, obj client.Object) {
		t.Helper()
		if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			t.Fatal(err)
		}
	}
	get("frozen", &cm)
	get("data", &pvc)
	oldCM, oldPVC := cm.UID, pvc.UID

	// Wait for the cache to hold both, so the next pass compares with them.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var c corev1.ConfigMap
		var v corev1.PersistentVolumeClaim
		if e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "frozen"}, &c) == nil &&
			e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, &v) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("cache never held the objects")
		}
		time.Sleep(50 * time.Millisecond)
	}

	res, err := applier().Sync(ctx, frozen("2"), claim("slow"))
	if err == nil || !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != apply.ReasonImmutableField {
		t.Fatalf("Sync error = %v, want a terminal %s error for the claim", err, apply.ReasonImmutableField)
	}
	if !strings.Contains(err.Error(), "PersistentVolumeClaim "+ns+"/data cannot take the change in place") {
		t.Errorf("error %q does not name the claim", err)
	}
	if res.Count(plugins.Configured) != 1 || res.Count(plugins.Skipped) != 1 {
		t.Errorf("Sync = %s, want the ConfigMap configured and the claim skipped", res.Summary())
	}
	get("frozen", &cm)
	if cm.UID == oldCM || cm.Data["v"] != "2" || !plugins.IsOwnedBy(cm.Labels, "settings", ns) {
		t.Errorf("ConfigMap: UID changed %t, data %v, labels %v; want a new ConfigMap of ours with v=2", cm.UID != oldCM, cm.Data, cm.Labels)
	}
	get("data", &pvc)
	if pvc.UID != oldPVC || pvc.DeletionTimestamp != nil || *pvc.Spec.StorageClassName != "fast" {
		t.Errorf("claim: UID changed %t, deleting %t, class %s; want it untouched", pvc.UID != oldPVC, pvc.DeletionTimestamp != nil, *pvc.Spec.StorageClassName)
	}
}
