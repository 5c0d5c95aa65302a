package volumes_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/volumes"
)

func setVolumes(t *testing.T, name string, spec map[string]any) {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Spec.Plugins = []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: volumes.Kind}, Spec: &runtime.RawExtension{Raw: raw}}}
	})
}

func claimSize(t *testing.T, ns, name string) string {
	t.Helper()
	var c corev1.PersistentVolumeClaim
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
		t.Fatal(err)
	}
	q := c.Spec.Resources.Requests[corev1.ResourceStorage]
	return q.String()
}

// TestSizes asks for larger volumes: one on a StorageClass that allows
// expansion grows; one on a class that does not stays as it is, with a False
// condition that says why; a template the host does not offer is refused
// with a False condition naming the field and value, and nothing is made.
func TestSizes(t *testing.T) {
	ctx := t.Context()
	run := "size-" + rand.String(4)
	grows, fixed := storageClass(t, true), storageClass(t, false)
	startHost(t, run, map[string]any{
		"templates": []map[string]any{
			{"name": "home", "storageClassName": grows, "size": "1Gi", "maxSize": "5Gi"},
			{"name": "fixed", "storageClassName": fixed, "size": "1Gi", "maxSize": "5Gi"},
		},
		"volumes": []map[string]any{{"template": "home"}, {"template": "fixed"}},
	})
	name := "size-" + rand.String(5)
	newProfile(t, name, run, "alice@example.org", nil)
	provision(t, name, "home")
	provision(t, name, "fixed")
	waitBound(t, name, "home")
	waitBound(t, name, "fixed")
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	setVolumes(t, name, map[string]any{"volumes": []map[string]any{{"template": "home", "size": "3Gi"}, {"template": "fixed", "size": "3Gi"}}})
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "does not allow volume expansion")
	t.Logf("%s=%s %s", condType, cond.Status, cond.Message)
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		got := claimSize(t, name, "home")
		return got == "3Gi", fmt.Sprintf("claim home requests %s, want 3Gi", got)
	})
	if got := claimSize(t, name, "fixed"); got != "1Gi" {
		t.Errorf("claim fixed requests %s, want 1Gi", got)
	}

	bad := "size-" + rand.String(5)
	newProfile(t, bad, run, "bob@example.org", map[string]any{"volumes": []map[string]any{{"template": "nope"}}})
	cond = testhost.WaitCondition(t, env.Client, bad, condType, plugins.ConditionFalse, `volumes[0].template "nope"`)
	t.Logf("%s=%s %s", condType, cond.Status, cond.Message)
	var claims corev1.PersistentVolumeClaimList
	if err := env.Client.List(ctx, &claims, client.InNamespace(bad)); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if len(claims.Items) != 0 {
		t.Errorf("a refused spec made %d claims", len(claims.Items))
	}
}
