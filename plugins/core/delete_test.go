package core_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestDeletingProfileDeletesNamespace deletes a Profile with users' things in
// its namespace: kube-controller-manager's garbage collector deletes the
// namespace through its owner reference, and the namespace controller
// everything in it.
func TestDeletingProfileDeletesNamespace(t *testing.T) {
	run := "delete-" + rand.String(4)
	name := "delete-" + rand.String(5)
	startCore(t, run, map[string]any{})
	p := newProfile(t, name, run, "alice@example.org", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	ctx := t.Context()
	users := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "notes", Namespace: name}, Data: map[string]string{"a": "b"}},
		&corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "workspace", Namespace: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "notebook", Namespace: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.org/notebook:1"}}},
		},
	}
	for _, o := range users {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	var pvc corev1.PersistentVolumeClaim
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(users[1]), &pvc); err != nil {
		t.Fatal(err)
	}
	if len(pvc.Finalizers) == 0 {
		t.Errorf("claim has no pvc-protection finalizer: %v", pvc.Finalizers)
	}

	start := time.Now()
	if err := env.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 90*time.Second, func() (bool, string) {
		var ns corev1.Namespace
		err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &ns)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("namespace %s: phase %s, deletion %v, err %v", name, ns.Status.Phase, ns.DeletionTimestamp, err)
	})
	t.Logf("namespace and its contents gone %s after the Profile's deletion", time.Since(start).Round(100*time.Millisecond))
	for _, o := range users {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T %s still there after its namespace: %v", o, o.GetName(), err)
		}
	}
}

// TestRevokeKeepsTheNamespace takes the core plugin off a Profile: under the
// default retention its namespace stays, with the users' things in it;
// under Delete, the namespace goes.
func TestRevokeKeepsTheNamespace(t *testing.T) {
	// What each revoke says it did.
	summaries := map[plugins.Retention]string{plugins.RetentionRetain: "no objects", plugins.RetentionDelete: "7 deleted"}
	for _, retention := range []plugins.Retention{plugins.RetentionRetain, plugins.RetentionDelete} {
		t.Run(string(retention), func(t *testing.T) {
			run := "revoke-" + rand.String(4)
			name := "revoke-" + rand.String(5)
			startCore(t, run, map[string]any{}, reconcilers.WithRetention(retention))
			newProfile(t, name, run, "alice@example.org", nil)
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
			notes := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "notes", Namespace: name}, Data: map[string]string{"a": "b"}}
			if err := env.Client.Create(t.Context(), notes); err != nil {
				t.Fatal(err)
			}

			testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { delete(p.Labels, labelTest) })
			testhost.WaitRevoked(t, env.Client, name, core.Kind, summaries[retention])
			var ns corev1.Namespace
			err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &ns)
			switch {
			case retention == plugins.RetentionDelete && (apierrors.IsNotFound(err) || err == nil && ns.DeletionTimestamp != nil):
			case retention == plugins.RetentionDelete:
				t.Errorf("namespace %s after the revoke under Delete: %v, deletion %v; want it deleted", name, err, ns.DeletionTimestamp)
			case err != nil || ns.DeletionTimestamp != nil:
				t.Errorf("namespace %s after the revoke under Retain: %v, deletion %v; want it kept", name, err, ns.DeletionTimestamp)
			default:
				if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(notes), &corev1.ConfigMap{}); err != nil {
					t.Errorf("the users' ConfigMap after the revoke under Retain: %v, want it kept", err)
				}
			}
		})
	}
}
