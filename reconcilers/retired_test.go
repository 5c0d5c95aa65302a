package reconcilers_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestOffPluginsConditionsGo: a host whose configuration turns two plugins
// off (one that makes objects in the namespace, one with outside state and
// a finalizer) takes their conditions off the Profile, so that Ready
// describes the plugins that serve it; it leaves what they made: their
// objects, and the finalizer that keeps the Profile, once deleted, waiting
// for the outside state's Revoke.
func TestOffPluginsConditionsGo(t *testing.T) {
	name := "retired-" + rand.String(5)
	const offObjects, offOutside = "LimitRangeReady", "AwsIamForServiceAccountReady"
	finalizer := plugins.FinalizerPrefix + "AwsIamForServiceAccount"
	testhost.NewProfile(t, env.Client, name, nil, entry(quotas.Kind, `{"hard":{"limits.cpu":"4"}}`))
	made := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "made-when-on", Labels: plugins.OwnershipLabels("limitrange", name)},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
	if err := env.Client.Create(t.Context(), made); err != nil {
		t.Fatal(err)
	}
	p := getProfile(t, name)
	p.Finalizers = append(p.Finalizers, finalizer)
	if err := env.Client.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions = []kubeflowv1.ProfileCondition{
		{Type: offObjects, Status: plugins.ConditionFalse, Message: "InvalidSpec: written while the plugin ran"},
		{Type: offOutside, Status: plugins.ConditionTrue, Message: "Applied: 2 objects in sync"},
	}
	if err := env.Client.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}

	testhost.StartWithStatusWriter(t, env, 0, []reconcilers.StatusWriterOption{reconcilers.WithRetired(offObjects, offOutside)},
		testhost.Plugin{Def: quotas.Definition()})
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		conds := getProfile(t, name).Status.Conditions
		types := make([]string, 0, len(conds))
		for _, c := range conds {
			types = append(types, c.Type+"="+c.Status)
		}
		slices.Sort(types)
		return slices.Equal(types, []string{"QuotasReady=True", "Ready=True"}), fmt.Sprintf("conditions %v", types)
	})
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(made), made); err != nil {
		t.Errorf("the object the off plugin made: %v, want it left", err)
	}
	if got := getProfile(t, name).Finalizers; !slices.Contains(got, finalizer) {
		t.Errorf("finalizers %v: the off plugin's is gone, and with it the Revoke of its outside state", got)
	}
	t.Logf("conditions %v; finalizers %v; %s/%s left", getProfile(t, name).Status.Conditions, getProfile(t, name).Finalizers, made.Namespace, made.Name)
	// Let the Profile go when the test ends.
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == finalizer })
	})
}
