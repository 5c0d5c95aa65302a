package quotas_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

const condType = "QuotasReady"

func quotaPlugin(hard map[string]string) kubeflowv1.Plugin {
	raw, _ := json.Marshal(map[string]any{"hard": hard})
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: quotas.Kind}, Spec: &runtime.RawExtension{Raw: raw}}
}

func uniqueName(prefix string) string { return prefix + "-" + rand.String(5) }

func getQuota(t *testing.T, ns string) (*corev1.ResourceQuota, error) {
	t.Helper()
	var rq corev1.ResourceQuota
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: quotas.DefaultName}, &rq)
	return &rq, err
}

func waitQuota(t *testing.T, ns string, check func(*corev1.ResourceQuota) (bool, string)) *corev1.ResourceQuota {
	t.Helper()
	var got *corev1.ResourceQuota
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		rq, err := getQuota(t, ns)
		if err != nil {
			return false, err.Error()
		}
		got = rq
		return check(rq)
	})
	return got
}

func hardIs(want corev1.ResourceList) func(*corev1.ResourceQuota) (bool, string) {
	return func(rq *corev1.ResourceQuota) (bool, string) {
		d := cmp.Diff(want, rq.Spec.Hard, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }))
		return d == "", "hard (-want +got):\n" + d
	}
}

func TestQuotaLifecycle(t *testing.T) {
	h := testhost.Start(t, env, testhost.Plugin{Def: quotas.Definition(), Options: []reconcilers.Option{reconcilers.WithResync(300 * time.Millisecond)}})
	name := uniqueName("life")
	p := testhost.NewProfile(t, env.Client, name, nil, quotaPlugin(map[string]string{"requests.cpu": "2", "limits.cpu": "4"}))

	rq := waitQuota(t, name, hardIs(corev1.ResourceList{"requests.cpu": resource.MustParse("2"), "limits.cpu": resource.MustParse("4")}))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "1 object in sync")

	t.Run("ownership", func(t *testing.T) {
		if diff := cmp.Diff(plugins.OwnershipLabels(quotas.Kind, name), rq.Labels); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		if len(rq.OwnerReferences) != 1 || rq.OwnerReferences[0].UID != p.UID || rq.OwnerReferences[0].Kind != "Profile" {
			t.Errorf("owner references = %+v, want one to Profile %s (%s)", rq.OwnerReferences, name, p.UID)
		}
		var managers []string
		for _, mf := range rq.ManagedFields {
			managers = append(managers, fmt.Sprintf("%s/%s", mf.Manager, mf.Operation))
		}
		if !slices.Contains(managers, "profilekit-quotas/Apply") {
			t.Errorf("managed fields = %v, want profilekit-quotas/Apply", managers)
		}
	})

	t.Run("resync with nothing changed sends no mutating request", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, quotas.Kind); len(got) != 0 {
			t.Errorf("mutating requests on resync = %v, want none", got)
		}
	})

	t.Run("a deleted quota comes back", func(t *testing.T) {
		old, _ := getQuota(t, name)
		if err := env.Client.Delete(t.Context(), old); err != nil {
			t.Fatal(err)
		}
		waitQuota(t, name, func(rq *corev1.ResourceQuota) (bool, string) {
			return rq.UID != old.UID, "still the old quota"
		})
	})

	t.Run("a hand edit is put back", func(t *testing.T) {
		rq, _ := getQuota(t, name)
		rq.Spec.Hard["limits.cpu"] = resource.MustParse("100")
		if err := env.Client.Update(t.Context(), rq); err != nil {
			t.Fatal(err)
		}
		waitQuota(t, name, hardIs(corev1.ResourceList{"requests.cpu": resource.MustParse("2"), "limits.cpu": resource.MustParse("4")}))
	})

	t.Run("a field the spec drops is removed", func(t *testing.T) {
		setPlugins(t, name, quotaPlugin(map[string]string{"limits.cpu": "4"}))
		waitQuota(t, name, hardIs(corev1.ResourceList{"limits.cpu": resource.MustParse("4")}))
	})

	t.Run("removing the plugin removes the quota and the condition", func(t *testing.T) {
		setPlugins(t, name)
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			_, err := getQuota(t, name)
			if !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("quota still there (%v)", err)
			}
			var p kubeflowv1.Profile
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			c := plugins.FindCondition(p.Status.Conditions, condType)
			return c == nil, fmt.Sprintf("condition still there: %+v", c)
		})
	})
}

func setPlugins(t *testing.T, name string, ps ...kubeflowv1.Plugin) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = ps })
}

func TestUnmanagedQuotaIsLeftAloneAndReported(t *testing.T) {
	testhost.Start(t, env, testhost.Plugin{Def: quotas.Definition()})
	name := uniqueName("conflict")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: quotas.DefaultName, Namespace: name},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("3")}},
	}
	if err := env.Client.Create(t.Context(), theirs); err != nil {
		t.Fatal(err)
	}
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{quotaPlugin(map[string]string{"limits.cpu": "4"})}},
	}
	if err := env.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) }) //nolint:forbidigo // cleanups run after t.Context is canceled

	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "Conflict: ResourceQuota "+name+"/"+quotas.DefaultName+" exists and is not managed")
	got, err := getQuota(t, name)
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != theirs.ResourceVersion || len(got.Labels) != 0 {
		t.Errorf("unmanaged quota was modified: resourceVersion %s -> %s, labels %v", theirs.ResourceVersion, got.ResourceVersion, got.Labels)
	}
}

func TestInvalidLabelKeepsQuotaAndOthersAreServed(t *testing.T) {
	testhost.Start(t, env, testhost.Plugin{Def: quotas.Definition()})
	bad := uniqueName("bad")
	good := uniqueName("good")
	testhost.NewProfile(t, env.Client, bad, map[string]string{"quotas.profilekit.dev/limits.cpu": "8"}, quotaPlugin(map[string]string{"requests.cpu": "1"}))
	want := corev1.ResourceList{"requests.cpu": resource.MustParse("1"), "limits.cpu": resource.MustParse("8")}
	before := waitQuota(t, bad, hardIs(want))

	// Break the label and, at the same time, create a valid Profile.
	testhost.UpdateProfile(t, env.Client, bad, func(p *kubeflowv1.Profile) { p.Labels["quotas.profilekit.dev/limits.cpu"] = "lots" })
	reconcilesBefore := testhost.Reconciles(t, quotas.Kind)
	testhost.NewProfile(t, env.Client, good, nil, quotaPlugin(map[string]string{"limits.cpu": "2"}))

	cond := testhost.WaitCondition(t, env.Client, bad, condType, plugins.ConditionFalse, "InvalidLabel")
	if !strings.Contains(cond.Message, `label quotas.profilekit.dev/limits.cpu="lots": not a quantity`) {
		t.Errorf("condition message %q does not name the label and its value", cond.Message)
	}
	waitQuota(t, good, hardIs(corev1.ResourceList{"limits.cpu": resource.MustParse("2")}))
	testhost.WaitCondition(t, env.Client, good, condType, plugins.ConditionTrue, "")

	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		var evs eventsv1.EventList
		if err := env.Client.List(t.Context(), &evs); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == bad && e.Reason == plugins.ReasonInvalidLabel && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, "lots") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no InvalidLabel event among %d events", len(evs.Items))
	})

	// No retry storm: the bad Profile waits for a change or the resync period.
	time.Sleep(2 * time.Second)
	n := testhost.Reconciles(t, quotas.Kind) - reconcilesBefore
	if n > 6 {
		t.Errorf("%v reconciles in about 2s for two Profiles, want a handful", n)
	}
	t.Logf("%v reconciles of the quotas controller since the label broke, for the broken and the new Profile", n)
	after, err := getQuota(t, bad)
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("quota changed after an invalid label: resourceVersion %s -> %s, hard %v", before.ResourceVersion, after.ResourceVersion, after.Spec.Hard)
	}
}
