package apps_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"

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
			foreign := &unstructured.Unstructured{Object: map[string]any{
				"spec": map[string]any{
					"project":     "default",
					"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "elsewhere"},
					"source":      map[string]any{"repoURL": "https://git.example.org/theirs.git", "path": ".", "targetRevision": "main"},
				},
			}}
			foreign.SetGroupVersionKind(apps.ApplicationKind)
			foreign.SetNamespace(argocdNS)
			foreign.SetName(apps.ApplicationName(team, "browser"))
			foreign.SetLabels(tc.labels(team))
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
