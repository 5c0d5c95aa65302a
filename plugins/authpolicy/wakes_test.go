package authpolicy_test

import (
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/authpolicy"
	"github.com/profilekit/profilekit/reconcilers"
)

// The RoleBinding watch wakes the plugin for what Contributors reads of a
// binding: a contributor binding's creation and a change of its role. The
// owner's namespaceAdmin (the owner comes from the Profile) and a change of
// a contributor binding's labels wake nothing.
func TestRoleBindingsWakeOnlyForWhatContributorsReads(t *testing.T) {
	js, err := yaml.YAMLToJSON([]byte(hostConfig))
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName("wakes")
	shard := map[string]string{"wakes-test": name}
	def, fence := testhost.Fenced(authpolicy.Definition())
	// The shard keeps other tests' Profiles from the counts.
	testhost.Start(t, env, testhost.Plugin{Def: def, Options: []reconcilers.Option{
		reconcilers.WithDefaults(js), reconcilers.WithResync(time.Hour), reconcilers.WithShard(labels.SelectorFromSet(shard)),
	}})
	testhost.NewProfile(t, env.Client, name, shard, plugin())
	waitAccess(t, name, wantAccess(name, "accounts.example.org:"+owner))
	create := func(rb *rbacv1.RoleBinding) {
		t.Helper()
		if err := env.Client.Create(t.Context(), rb); err != nil {
			t.Fatal(err)
		}
	}
	fence1 := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "fence-1"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}
	create(fence1)
	fence.Wait(t, "fence-1")
	wakes := func() float64 { return testhost.Wakes(t, authpolicy.Kind, "watched/RoleBinding") }
	before := wakes()

	create(contributorBinding(name, "namespaceAdmin", owner, "admin"))
	bob := contributorBinding(name, "user-bob-example-org-clusterrole-edit", "bob@example.org", "edit")
	create(bob)
	waitAccess(t, name, wantAccess(name, "accounts.example.org:bob@example.org", "accounts.example.org:"+owner))
	relabel := func(edit func(*rbacv1.RoleBinding)) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var rb rbacv1.RoleBinding
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(bob), &rb); err != nil {
				return err
			}
			edit(&rb)
			return env.Client.Update(t.Context(), &rb)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	relabel(func(rb *rbacv1.RoleBinding) { rb.Labels = map[string]string{"example.org/note": "x"} })
	fence2 := fence1.DeepCopy()
	fence2.Name, fence2.ResourceVersion = "fence-2", ""
	create(fence2)
	fence.Wait(t, "fence-2")
	if got := wakes() - before; got != 1 {
		t.Errorf("namespaceAdmin, bob's binding and a label on it woke the plugin %v times, want 1 (bob's binding)", got)
	}

	relabel(func(rb *rbacv1.RoleBinding) { rb.Annotations["role"] = "admin" })
	waitAccess(t, name, wantAccess(name, "accounts.example.org:"+owner))
	if got := wakes() - before; got != 2 {
		t.Errorf("bob's role changing woke the plugin %v times in all, want 2", got)
	}
}
