package volumes_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/plugintest"
	"github.com/profilekit/profilekit/plugins/volumes"
)

// scenarioOwner is the owner of the harness's Profiles.
const scenarioOwner = "owner@example.org"

// scenario is the volumes plugin for a Profile that comes back: a volume
// retained from the last Profile of its name and owner waits for its home
// claim. The Profile takes its home and scratch volumes (the retained one
// is reserved for the home claim: its claimRef points at the new claim
// without the old uid, its release mark goes), then trades scratch for a
// datasets volume (one claim deleted, one added, home kept), and the
// plugin is removed (the claims go, the volume is marked released again
// and stays). Observe shows the retained volume: its claimRef, our labels
// and annotations, the presence of the release mark and its reclaim
// policy; Touches lets the plugin write it.
//
// The harness compares whole claims and cannot wait for another
// controller, while kube-controller-manager binds a reserved claim a
// moment after the pass that made it, and annotates every other claim for
// its provisioner: validating admission policies refuse
// kube-controller-manager's writes of the scenario's volumes and claims
// (but for the protection finalizer of one being deleted), so that every
// plan compares the claims at the same point, reserved and Pending. For the same reason the home claim keeps its size: a claim
// grows only once bound.
func scenario(t *testing.T) plugintest.Scenario {
	sc := storageClass(t, true)
	probe := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "hold-probe-" + rand.String(6)}, Spec: corev1.PersistentVolumeSpec{
		StorageClassName:       sc,
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		ClaimRef:               &corev1.ObjectReference{Namespace: "default", Name: "probe", UID: "probe"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: fakeDriver, VolumeHandle: "probe"}},
	}}
	testhost.Refuse(t, env.Client, "hold-binding-"+sc, "persistentvolumes",
		"object.spec.storageClassName != '"+sc+"' || request.userInfo.username != 'system:kube-controller-manager' && !object.metadata.name.startsWith('hold-probe-')",
		probe, admissionregistrationv1.Create, admissionregistrationv1.Update)
	claimProbe := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hold-probe-" + rand.String(6)}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: &sc,
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	testhost.Refuse(t, env.Client, "hold-claims-"+sc, "persistentvolumeclaims",
		"!has(object.spec.storageClassName) || object.spec.storageClassName != '"+sc+"' || has(object.metadata.deletionTimestamp) || request.userInfo.username != 'system:kube-controller-manager' && !object.metadata.name.startsWith('hold-probe-')",
		claimProbe, admissionregistrationv1.Create, admissionregistrationv1.Update)
	defaults, err := json.Marshal(map[string]any{
		"templates": []map[string]any{
			{"name": "home", "claimName": "workspace", "storageClassName": sc, "size": "1Gi", "maxSize": "5Gi",
				"labels": map[string]string{"notebooks.example.org/automount": "true"}},
			{"name": "scratch", "storageClassName": sc, "size": "2Gi"},
			{"name": "datasets", "storageClassName": sc, "size": "10Gi", "accessModes": []string{"ReadWriteMany"}},
		},
		"volumes": []map[string]any{{"template": "home"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return plugintest.Scenario{
		Def:      volumes.Definition(),
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "create", Spec: map[string]any{"volumes": []any{map[string]any{"template": "home"}, map[string]any{"template": "scratch"}}}},
			{Name: "trade scratch for datasets", Spec: map[string]any{"volumes": []any{map[string]any{"template": "home"}, map[string]any{"template": "datasets"}}}},
			{Name: "remove", Remove: true},
			{Name: "add again", Spec: map[string]any{"volumes": []any{map[string]any{"template": "home"}, map[string]any{"template": "scratch"}}},
				Change: func(ctx context.Context, c client.Client, namespace string) error {
					return settled(ctx, c, namespace+"-home")
				}},
			{Name: "delete the Profile", Delete: true},
		},
		Setup: func(ctx context.Context, c client.Client, namespace string) error {
			if err := c.Create(ctx, retained(namespace, sc)); err != nil {
				return err
			}
			return settled(ctx, c, namespace+"-home")
		},
		Data: func(ctx context.Context, namespace string) (map[string]string, error) {
			out := map[string]string{}
			var claims corev1.PersistentVolumeClaimList
			if err := env.Client.List(ctx, &claims, client.InNamespace(namespace)); err != nil {
				return nil, err
			}
			for _, c := range claims.Items {
				if c.DeletionTimestamp == nil {
					out["claim "+c.Name] = string(c.UID)
				}
			}
			var pv corev1.PersistentVolume
			if err := env.Client.Get(ctx, client.ObjectKey{Name: namespace + "-home"}, &pv); err == nil {
				out["volume"] = string(pv.UID)
			} else if !apierrors.IsNotFound(err) {
				return nil, err
			}
			return out, nil
		},
		Retained: []string{"retained volume"}, // the home volume outlives its Profiles
		Observe: func(ctx context.Context, namespace string) (map[string]string, error) {
			var pv corev1.PersistentVolume
			err := env.Client.Get(ctx, client.ObjectKey{Name: namespace + "-home"}, &pv)
			if apierrors.IsNotFound(err) {
				return map[string]string{"retained volume": "gone"}, nil
			}
			if err != nil {
				return nil, err
			}
			ref := pv.Spec.ClaimRef
			_, released := pv.Labels[volumes.LabelReleasedAt]
			b, err := json.Marshal(map[string]any{
				"claimRef":    map[string]any{"namespace": ref.Namespace, "name": ref.Name, "uid": ref.UID},
				"labels":      ours(pv.Labels, plugins.LabelManagedBy, plugins.LabelPlugin, plugins.LabelProfile, volumes.LabelTemplate, volumes.LabelOwner),
				"annotations": ours(pv.Annotations, volumes.AnnotationOwner),
				"released":    released,
				"reclaim":     pv.Spec.PersistentVolumeReclaimPolicy,
			})
			return map[string]string{"retained volume": string(b)}, err
		},
		Touches: []string{"PersistentVolume /<profile>-home"},
	}
}

// settled waits until kube-controller-manager has written the volume name
// (its status, which the policies let it write) and stopped: nothing
// changes it for half a second. A pass of a plan then never meets that
// write half the time.
func settled(ctx context.Context, c client.Client, name string) error {
	last := ""
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, false, func(ctx context.Context) (bool, error) {
		var pv corev1.PersistentVolume
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &pv); err != nil {
			return false, err
		}
		done := pv.Status.Phase != "" && pv.ResourceVersion == last
		last = pv.ResourceVersion
		return done, nil
	})
}

// retained is the volume the last Profile of namespace's name and owner
// left for its home claim: Released, with Retain, its claimRef naming the
// old claim's uid.
func retained(namespace, sc string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name: namespace + "-home",
			Labels: map[string]string{
				plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: volumes.Kind, plugins.LabelProfile: namespace,
				volumes.LabelTemplate: "home", volumes.LabelOwner: volumes.OwnerHash(scenarioOwner), volumes.LabelReleasedAt: "1767225600",
			},
			Annotations: map[string]string{volumes.AnnotationOwner: scenarioOwner, volumes.AnnotationReleasedAt: "2026-01-01T00:00:00Z"},
		},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              sc,
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: namespace, Name: "workspace",
				UID: types.UID("gone-" + rand.String(8))},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: fakeDriver, VolumeHandle: "handle-" + namespace}},
		},
	}
}

// ours is the entries of m under keys.
func ours(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// TestSurvivesEveryPerturbation runs every crash, stale and unobserved
// plan of the scenario; the plugin calls no outside system. The patterns
// run side by side: each plan has its own Profile, and its volumes are
// named for it.
func TestSurvivesEveryPerturbation(t *testing.T) {
	sc := scenario(t) // once: its sources and policies serve every pattern
	plugintest.Harness{Client: env.Client, Parallel: true}.Survives(t, func(*testing.T) plugintest.Scenario { return sc }, plugintest.ClusterPatterns...)
}

// TestHomeClaimBindsAfterAnInterruptedRemove runs the plans in which the
// host stops while it removes the plugin and the Profile moves on (the
// plugin added again, or the Profile deleted) before it starts again. A
// host that stopped after it took back the home volume's reservation and
// before it deleted the home claim left the claim, which names the
// volume, waiting for good once the plugin was added again: the volume
// must be reserved for it anew.
func TestHomeClaimBindsAfterAnInterruptedRemove(t *testing.T) {
	t.Setenv(plugintest.PlanEnv, "crash-moved-on step 2 (remove)")
	plans := plugintest.Harness{Client: env.Client}.CrashThenMoveOn(t, scenario(t))
	if plans.Run == 0 {
		t.Fatalf("no plan of the removal step ran (%d left out): the scenario's steps changed", plans.Skipped)
	}
	t.Logf("%d crash-moved-on plans of the removal step, %d failed", plans.Run, plans.Failed)
}
