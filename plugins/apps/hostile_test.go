package apps_test

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
)

// The hostile suite of the Argo CD namespace, which other tools and every
// Profile share. Crafted names that met in the first release are
// TestCollidingPairsGetTheirOwnApplications'; here, what is already there.

// An Application of the wanted name that another tool made, or that is
// labelled as another Profile's, is a Conflict, and is neither written nor
// deleted, not even when the Profile opts out again.
func TestForeignApplicationOfTheWantedName(t *testing.T) {
	for _, tc := range []struct {
		reason string
		labels func(team string) map[string]string
	}{
		{"another tool's", func(string) map[string]string {
			return map[string]string{"app.kubernetes.io/managed-by": "someone-else"}
		}},
		{"labelled as another Profile's", func(string) map[string]string { return plugins.OwnershipLabels(apps.Kind, "victim-"+rand.String(5)) }},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			twoApps(t)
			team := "f" + rand.String(5)
			foreign := otherApplication(apps.ApplicationName(team, "browser"), "elsewhere", tc.labels(team))
			if err := env.Client.Create(t.Context(), foreign); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(t.Context(), foreign) })

			testhost.NewProfile(t, env.Client, team, map[string]string{"apps.example.org/browser": "true"})
			c := testhost.WaitCondition(t, env.Client, team, condType, plugins.ConditionFalse, plugins.ReasonConflict)
			if !strings.Contains(c.Message, foreign.GetName()) {
				t.Errorf("condition %q does not name the Application", c.Message)
			}
			testhost.UpdateProfile(t, env.Client, team, func(p *kubeflowv1.Profile) { p.Labels = nil })
			testhost.WaitCondition(t, env.Client, team, condType, plugins.ConditionTrue, "")
			got, ok := getApplication(t, foreign.GetName())
			switch {
			case !ok:
				t.Fatal("the foreign Application was deleted")
			case got.GetResourceVersion() != foreign.GetResourceVersion():
				t.Errorf("the foreign Application was written: labels %v, destination %s", got.GetLabels(), destination(got))
			}
		})
	}
}

// A tenant with Kubeflow's rights in its namespace reaches no Application:
// it can neither read, write, pre-empt nor delete one in the Argo CD
// namespace, so the Application made for its Profile is what the host
// configured, and stays.
func TestTenantReachesNoApplication(t *testing.T) {
	twoApps(t)
	team := "t" + rand.String(5)
	testhost.NewProfile(t, env.Client, team, map[string]string{"apps.example.org/browser": "true"})
	testhost.WaitCondition(t, env.Client, team, condType, plugins.ConditionTrue, "")
	name := apps.ApplicationName(team, "browser")
	ours, ok := getApplication(t, name)
	if !ok {
		t.Fatalf("no Application %s", name)
	}
	tenant := testhost.Tenant(t, env, team)

	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(apps.ApplicationKind)
	if err := tenant.Get(t.Context(), client.ObjectKeyFromObject(ours), got); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant reads its Application: %v, want Forbidden", err)
	}
	edited := ours.DeepCopy()
	_ = unstructured.SetNestedField(edited.Object, "https://git.example.org/tenant.git", "spec", "source", "repoURL")
	if err := tenant.Update(t.Context(), edited); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant updates its Application: %v, want Forbidden", err)
	}
	if err := tenant.Delete(t.Context(), ours.DeepCopy()); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant deletes its Application: %v, want Forbidden", err)
	}
	// An Application of the name a second app would take, made ahead.
	ahead := otherApplication(apps.ApplicationName(team, "s3-browser"), "kube-system", plugins.OwnershipLabels(apps.Kind, team))
	if err := tenant.Create(t.Context(), ahead); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant creates an Application in %s: %v, want Forbidden", argocdNS, err)
	}
	after, ok := getApplication(t, name)
	if !ok || after.GetResourceVersion() != ours.GetResourceVersion() {
		t.Errorf("the Application changed while the tenant tried: present %v", ok)
	}
	testhost.UpdateProfile(t, env.Client, team, func(p *kubeflowv1.Profile) { p.Labels = nil })
	// Deleted by the host (Argo CD's resources finalizer, which no Argo CD
	// here removes, keeps it until then).
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		app, ok := getApplication(t, name)
		return !ok || app.GetDeletionTimestamp() != nil, "the Application is still there after the Profile opted out"
	})
}

// otherApplication is an Application of name in the Argo CD namespace that
// the plugin did not make: it deploys someone else's repository into
// destination.
func otherApplication(name, destination string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"project":     "default",
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": destination},
		"source":      map[string]any{"repoURL": "https://git.example.org/theirs.git", "path": ".", "targetRevision": "main"},
	}}}
	u.SetGroupVersionKind(apps.ApplicationKind)
	u.SetNamespace(argocdNS)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}
