package contributors_test

import (
	"context"
	"encoding/json"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// handMadeKey is what Observe reports of a contributor added in the
// dashboard: a binding the plugin must never write or delete.
const handMadeKey = "the dashboard's binding"

// scenario declares a user and a group, changes the user's role (a binding
// and a policy of a new name, the old pair deleted), removes the group,
// removes the plugin, adds it again and deletes the Profile, in a namespace
// that also holds a contributor added in the dashboard. The harness checks
// after every write that no RoleBinding subject or AuthorizationPolicy rule
// appears that neither the step before nor the step after gives; Observe
// shows the dashboard's binding, which neither a crash nor a stale or blind
// view may get the plugin to touch.
func scenario(*testing.T) plugintest.Scenario {
	return plugintest.Scenario{
		Def:      contributors.Definition(),
		Defaults: []byte(hostConfig),
		Steps: []plugintest.Step{
			{Name: "add a user and a group", Spec: spec(entry("User", "alice@example.org", "edit"), entry("Group", "readers", "view"))},
			{Name: "change the user's role", Spec: spec(entry("User", "alice@example.org", "view"), entry("Group", "readers", "view"))},
			{Name: "remove the group", Spec: spec(entry("User", "alice@example.org", "view"))},
			{Name: "remove the plugin", Remove: true},
			{Name: "add again", Spec: spec(entry("User", "alice@example.org", "edit"), entry("User", "bob@example.org", "view"))},
			{Name: "delete the Profile", Delete: true},
		},
		Setup: func(ctx context.Context, c client.Client, namespace string) error {
			rb := &rbacv1.RoleBinding{}
			rb.Namespace, rb.Name = namespace, contributors.BindingName("User", "zed@example.org", "view")
			rb.Annotations = map[string]string{"user": "zed@example.org", "role": "view"}
			rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-view"}
			rb.Subjects = []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "zed@example.org"}}
			return c.Create(ctx, rb)
		},
		Retained: []string{handMadeKey}, // the dashboard's, not the plugin's to take
		Observe: func(ctx context.Context, namespace string) (map[string]string, error) {
			var rb rbacv1.RoleBinding
			key := client.ObjectKey{Namespace: namespace, Name: contributors.BindingName("User", "zed@example.org", "view")}
			if err := env.Client.Get(ctx, key, &rb); err != nil {
				return nil, err
			}
			b, err := json.Marshal(map[string]any{"labels": rb.Labels, "annotations": rb.Annotations, "owners": rb.OwnerReferences, "subjects": rb.Subjects, "generation": rb.Generation})
			return map[string]string{handMadeKey: string(b)}, err
		},
	}
}

func spec(entries ...map[string]string) map[string]any {
	return map[string]any{"contributors": entries}
}

// TestContributorsSurvivesEveryPerturbation runs every crash, stale and
// unobserved plan of the scenario; the plugin calls no outside system.
func TestContributorsSurvivesEveryPerturbation(t *testing.T) {
	plugintest.Harness{Client: env.Client}.Survives(t, scenario, plugintest.ClusterPatterns...)
}
