package volumes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/volumes"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// The harness's patterns wait on kube-controller-manager's bindings.
	testenv.Parallel(4)
	testenv.Main(m, &env, testenv.Options{ControllerManager: true})
}

const (
	condType = "VolumesReady"
	labelRun = "volumes.test/run"
	// fakeDriver is the CSI driver the test's volumes name; nothing runs it.
	fakeDriver = "fake.csi.profilekit.dev"
)

// storageClass creates a StorageClass whose provisioner nothing runs, with
// reclaim policy Delete, as most provisioners have.
func storageClass(t *testing.T, expandable bool) string {
	t.Helper()
	return storageClassWith(t, expandable, nil)
}

// storageClassWith is storageClass with annotations.
func storageClassWith(t *testing.T, expandable bool, annotations map[string]string) string {
	t.Helper()
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: "sc-" + rand.String(6), Annotations: annotations},
		Provisioner:          fakeDriver,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		AllowVolumeExpansion: ptr.To(expandable),
	}
	if err := env.Client.Create(t.Context(), sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), sc) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	return sc.Name
}

// startHost serves the Profiles of run with the volumes plugin and cfg as
// the host's defaults.
func startHost(t *testing.T, run string, cfg map[string]any, opts ...reconcilers.Option) *testhost.Host {
	t.Helper()
	return startHostOf(t, volumes.Definition(), run, cfg, opts...)
}

// startHostOf is startHost with the plugin of def.
func startHostOf(t *testing.T, def plugins.Definition, run string, cfg map[string]any, opts ...reconcilers.Option) *testhost.Host {
	t.Helper()
	defaults, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return testhost.Start(t, env, testhost.Plugin{Def: def, Options: append([]reconcilers.Option{
		reconcilers.WithDefaults(defaults),
		reconcilers.WithEnabledForAll(labels.SelectorFromSet(labels.Set{labelRun: run})),
		reconcilers.WithResync(300 * time.Millisecond),
	}, opts...)})
}

// newProfile creates a Profile of run owned by owner and its namespace,
// owned by the Profile as the profile controller makes it, so that
// kube-controller-manager deletes the namespace after the Profile.
func newProfile(t *testing.T, name, run, owner string, spec map[string]any) *kubeflowv1.Profile {
	t.Helper()
	ctx := t.Context()
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{labelRun: run}},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: owner}},
	}
	if spec != nil {
		raw, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.Plugins = []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: volumes.Kind}, Spec: &runtime.RawExtension{Raw: raw}}}
	}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatalf("create profile: %v", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: kubeflowv1.GroupVersion.String(), Kind: "Profile", Name: p.Name, UID: p.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), p)  //nolint:forbidigo // cleanups run after t.Context is canceled
		_ = env.Client.Delete(context.Background(), ns) //nolint:forbidigo // cleanups run after t.Context is canceled
	})
	return p
}

// deleteProfile deletes the Profile and waits until it and its namespace
// are gone.
func deleteProfile(t *testing.T, p *kubeflowv1.Profile) {
	t.Helper()
	ctx := t.Context()
	if err := env.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testhost.Eventually(t, 90*time.Second, func() (bool, string) {
		var q kubeflowv1.Profile
		if err := env.Client.Get(ctx, client.ObjectKey{Name: p.Name}, &q); !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("profile %s still there: finalizers %v", p.Name, q.Finalizers)
		}
		var ns corev1.Namespace
		err := env.Client.Get(ctx, client.ObjectKey{Name: p.Name}, &ns)
		return apierrors.IsNotFound(err), fmt.Sprintf("namespace %s: phase %s, err %v", p.Name, ns.Status.Phase, err)
	})
	t.Logf("profile %s and its namespace gone %s after the delete", p.Name, time.Since(start).Round(100*time.Millisecond))
}

// provision does what a CSI provisioner does for a pending claim: it makes
// a volume of the claim's size and class with a new volumeHandle, pre-bound
// to the claim; kube-controller-manager's binder completes the binding.
func provision(t *testing.T, ns, claim string) *corev1.PersistentVolume {
	t.Helper()
	return provisionAs(t, ns, claim, func(*corev1.PersistentVolume) {})
}

// provisionAs is provision with edit applied to the volume before it is
// made.
func provisionAs(t *testing.T, ns, claim string, edit func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
	t.Helper()
	ctx := t.Context()
	var pvc corev1.PersistentVolumeClaim
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &pvc)
		return err == nil, fmt.Sprintf("claim %s/%s: %v", ns, claim, err)
	})
	var sc storagev1.StorageClass
	if err := env.Client.Get(ctx, client.ObjectKey{Name: *pvc.Spec.StorageClassName}, &sc); err != nil {
		t.Fatal(err)
	}
	name := "pvc-" + string(pvc.UID)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": fakeDriver}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      pvc.Spec.Resources.Requests,
			AccessModes:                   pvc.Spec.AccessModes,
			StorageClassName:              sc.Name,
			PersistentVolumeReclaimPolicy: *sc.ReclaimPolicy,
			ClaimRef: &corev1.ObjectReference{
				APIVersion: "v1", Kind: "PersistentVolumeClaim",
				Namespace: ns, Name: claim, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: fakeDriver, VolumeHandle: "handle-" + rand.String(10),
			}},
		},
	}
	edit(pv)
	if err := env.Client.Create(ctx, pv); err != nil {
		t.Fatalf("provision volume for %s/%s: %v", ns, claim, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pv) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	return pv
}

// waitBound waits until claim ns/name is Bound and returns it with its volume.
func waitBound(t *testing.T, ns, name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	t.Helper()
	ctx := t.Context()
	var pvc corev1.PersistentVolumeClaim
	var pv corev1.PersistentVolume
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pvc); err != nil {
			return false, err.Error()
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return false, fmt.Sprintf("claim %s/%s is %s (volumeName %q)", ns, name, pvc.Status.Phase, pvc.Spec.VolumeName)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); err != nil {
			return false, err.Error()
		}
		return pv.Status.Phase == corev1.VolumeBound, fmt.Sprintf("volume %s is %s", pv.Name, pv.Status.Phase)
	})
	return &pvc, &pv
}

// waitVolume waits until volume name satisfies cond and returns it.
func waitVolume(t *testing.T, name string, timeout time.Duration, cond func(*corev1.PersistentVolume) (bool, string)) *corev1.PersistentVolume {
	t.Helper()
	var pv corev1.PersistentVolume
	testhost.Eventually(t, timeout, func() (bool, string) {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &pv); err != nil { //nolint:forbidigo // no *testing.T in reach
			return false, err.Error()
		}
		return cond(&pv)
	})
	return &pv
}

func hostConfig(sc string) map[string]any {
	return map[string]any{
		"templates": []map[string]any{{
			"name": "home", "claimName": "workspace", "storageClassName": sc, "size": "1Gi", "maxSize": "5Gi",
			"labels": map[string]string{"notebooks.example.org/automount": "true"},
		}},
		"volumes": []map[string]any{{"template": "home"}},
	}
}

// TestVolumeOutlivesProfile follows one volume through a Profile's life:
// provisioned and bound, made Retain and labelled; the Profile deleted and
// its namespace gone while the volume stays Released with the same
// volumeHandle; the same name created again by another owner, whose Profile
// is refused (the name is held for its owner) and gets no claim; the owner's Profile created again, whose new claim binds to the
// same volume; and a pass with nothing changed that writes nothing.
func TestVolumeOutlivesProfile(t *testing.T) {
	ctx := t.Context()
	run := "life-" + rand.String(4)
	name := "vol-" + rand.String(5)
	sc := storageClass(t, true)
	host := startHost(t, run, hostConfig(sc))

	p := newProfile(t, name, run, "alice@example.org", nil)
	provisioned := provision(t, name, "workspace")
	pvc, _ := waitBound(t, name, "workspace")
	t.Logf("claim %s/%s bound to %s (volumeHandle %s)", name, pvc.Name, pvc.Spec.VolumeName, provisioned.Spec.CSI.VolumeHandle)
	if pvc.Spec.VolumeName != provisioned.Name {
		t.Fatalf("claim bound to %s, want the provisioned %s", pvc.Spec.VolumeName, provisioned.Name)
	}
	if got := pvc.Labels["notebooks.example.org/automount"]; got != "true" {
		t.Errorf("claim's automount label = %q, want true", got)
	}
	if got := pvc.Annotations[volumes.AnnotationOwner]; got != "alice@example.org" {
		t.Errorf("claim's owner annotation = %q", got)
	}
	pv := waitVolume(t, provisioned.Name, 20*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain && pv.Labels[volumes.LabelTemplate] == "home",
			fmt.Sprintf("reclaim %s, labels %v", pv.Spec.PersistentVolumeReclaimPolicy, pv.Labels)
	})
	wantLabels := map[string]string{
		plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: volumes.Kind, plugins.LabelProfile: name,
		volumes.LabelTemplate: "home", volumes.LabelOwner: volumes.OwnerHash("alice@example.org"),
	}
	if diff := cmp.Diff(wantLabels, pv.Labels); diff != "" {
		t.Errorf("volume labels (-want +got):\n%s", diff)
	}
	t.Logf("volume %s: reclaim %s, labels %v", pv.Name, pv.Spec.PersistentVolumeReclaimPolicy, pv.Labels)
	var reclaimManager string
	for _, mf := range pv.ManagedFields {
		if mf.Operation == metav1.ManagedFieldsOperationApply && mf.FieldsV1 != nil &&
			json.Valid(mf.FieldsV1.Raw) && containsField(mf.FieldsV1.Raw, "f:persistentVolumeReclaimPolicy") {
			reclaimManager = mf.Manager
		}
	}
	if reclaimManager != plugins.FieldManagerFor(volumes.Kind) {
		t.Errorf("reclaim policy applied by %q, want %q", reclaimManager, plugins.FieldManagerFor(volumes.Kind))
	}
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	writes := host.ResyncWrites(t, 3, volumes.Kind)
	t.Logf("3 passes with nothing changed: %d mutating requests", len(writes))
	if len(writes) != 0 {
		t.Errorf("a pass with nothing changed sent %d mutating requests: %v", len(writes), writes)
	}
	settledTrue(t, name)

	deleteProfile(t, p)
	pv = waitVolume(t, provisioned.Name, 30*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
		return pv.Status.Phase == corev1.VolumeReleased, fmt.Sprintf("volume %s is %s", pv.Name, pv.Status.Phase)
	})
	if pv.Spec.CSI.VolumeHandle != provisioned.Spec.CSI.VolumeHandle {
		t.Errorf("volumeHandle %s, want %s", pv.Spec.CSI.VolumeHandle, provisioned.Spec.CSI.VolumeHandle)
	}
	if pv.Labels[volumes.LabelReleasedAt] == "" || pv.Annotations[volumes.AnnotationReleasedAt] == "" {
		t.Errorf("released volume has no release mark: labels %v annotations %v", pv.Labels, pv.Annotations)
	}
	t.Logf("after the Profile: volume %s %s, reclaim %s, volumeHandle %s, released-at %s",
		pv.Name, pv.Status.Phase, pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.CSI.VolumeHandle, pv.Annotations[volumes.AnnotationReleasedAt])

	// Another owner's Profile of the same name, with the same template: the
	// name is held for alice, so the plugin makes no claim at all.
	other := newProfile(t, name, run, "mallory@example.org", nil)
	cond := testhost.WaitTenureConflict(t, env.Client, name, condType)
	time.Sleep(3 * time.Second) // give the plugin and the binder time to do the wrong thing
	var otherClaim corev1.PersistentVolumeClaim
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: "workspace"}, &otherClaim); !apierrors.IsNotFound(err) {
		t.Errorf("another owner's Profile of the name got a claim (%v): %s, volumeName %q", err, otherClaim.Status.Phase, otherClaim.Spec.VolumeName)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: provisioned.Name}, pv); err != nil {
		t.Fatal(err)
	}
	if pv.Status.Phase != corev1.VolumeReleased || pv.Labels[plugins.LabelProfile] != name || pv.Annotations[volumes.AnnotationOwner] != "alice@example.org" {
		t.Errorf("retained volume changed for another owner: %s, labels %v, annotations %v", pv.Status.Phase, pv.Labels, pv.Annotations)
	}
	t.Logf("another owner's Profile of the name: %s=%s; retained volume still %s", condType, cond.Status, pv.Status.Phase)
	deleteProfile(t, other)

	// The owner's Profile comes back.
	newProfile(t, name, run, "alice@example.org", nil)
	pvc, back := waitBound(t, name, "workspace")
	if back.Name != provisioned.Name || back.Spec.CSI.VolumeHandle != provisioned.Spec.CSI.VolumeHandle {
		t.Errorf("returning Profile's claim bound to %s (handle %s), want %s (handle %s)",
			back.Name, back.Spec.CSI.VolumeHandle, provisioned.Name, provisioned.Spec.CSI.VolumeHandle)
	}
	if _, marked := back.Labels[volumes.LabelReleasedAt]; marked {
		t.Errorf("volume given back still marked released: %v", back.Labels)
	}
	t.Logf("returning Profile: claim %s/%s (uid %s) bound to %s, volumeHandle %s", name, pvc.Name, pvc.UID, back.Name, back.Spec.CSI.VolumeHandle)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	writes = host.ResyncWrites(t, 3, volumes.Kind)
	t.Logf("3 passes with nothing changed: %d mutating requests", len(writes))
	if len(writes) != 0 {
		t.Errorf("a pass with nothing changed sent %d mutating requests: %v", len(writes), writes)
	}
	settledTrue(t, name)
	var pvs corev1.PersistentVolumeList
	if err := env.Client.List(ctx, &pvs); err != nil {
		t.Fatal(err)
	}
	for _, v := range pvs.Items {
		if v.Spec.ClaimRef != nil && v.Spec.ClaimRef.Namespace == name && v.Name != provisioned.Name {
			t.Errorf("volume %s was made or bound for %s besides the retained one", v.Name, name)
		}
	}
}

// settledTrue fails the test unless the Profile's condition, once its
// passes are quiet, is True: a pass that keeps the bound volume's marks and
// then reports a failure sends nothing and is seen only there.
func settledTrue(t *testing.T, name string) {
	t.Helper()
	if c := testhost.CurrentCondition(t, env.Client, name, condType); c.Status != plugins.ConditionTrue {
		t.Errorf("%s after passes with nothing changed = %s: %s", condType, c.Status, c.Message)
	}
}

func containsField(raw []byte, field string) bool {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return false
	}
	var walk func(map[string]any) bool
	walk = func(m map[string]any) bool {
		for k, v := range m {
			if k == field {
				return true
			}
			if sub, ok := v.(map[string]any); ok && walk(sub) {
				return true
			}
		}
		return false
	}
	return walk(m)
}
