package contributors_test

import (
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/reconcilers"
)

// The RoleBinding watch wakes the plugin for what it reads of a binding in
// a contributor's shape that it did not write: that it is there, and whose
// it is. The owner's namespaceAdmin (an upstream name, never a
// contributor's) and a label other than the ownership labels wake nothing.
func TestRoleBindingsWakeOnlyForWhatThePluginReads(t *testing.T) {
	name := uniqueName("wakes")
	shard := map[string]string{"wakes-test": name}
	def, fence := testhost.Fenced(contributors.Definition())
	// The shard keeps other tests' Profiles from the counts.
	testhost.Start(t, env, testhost.Plugin{Def: def, Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(hostConfig)),
		reconcilers.WithResync(time.Hour),
		reconcilers.WithShard(labels.SelectorFromSet(shard)),
	}})
	testhost.NewProfile(t, env.Client, name, shard)
	declare(t, name, entry("User", "alice@example.org", "edit"))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	create := func(o client.Object) {
		t.Helper()
		if err := env.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	plain := func(n string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: n}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}
	}
	create(plain("fence-1"))
	fence.Wait(t, "fence-1")
	wakes := func() float64 { return testhost.Wakes(t, contributors.Kind, "watched/RoleBinding") }
	before := wakes()

	admin := plain("namespaceAdmin")
	admin.Annotations = map[string]string{"user": testhost.DefaultOwner, "role": "admin"}
	create(admin)
	carol := plain(contributors.BindingName("User", "carol@example.org", "view"))
	carol.Annotations = map[string]string{"user": "carol@example.org", "role": "view"}
	create(carol)
	edit := func(edit func(*rbacv1.RoleBinding)) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var rb rbacv1.RoleBinding
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(carol), &rb); err != nil {
				return err
			}
			edit(&rb)
			return env.Client.Update(t.Context(), &rb)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	edit(func(rb *rbacv1.RoleBinding) { rb.Labels = map[string]string{"example.org/note": "x"} })
	create(plain("fence-2"))
	fence.Wait(t, "fence-2")
	if got := wakes() - before; got != 1 {
		t.Errorf("namespaceAdmin, carol's hand-made binding and a label on it woke the plugin %v times, want 1 (carol's binding)", got)
	}

	// Labelled as the plugin's own for the Profile, which does not declare
	// carol: the plugin reads whose it is, and prunes it.
	edit(func(rb *rbacv1.RoleBinding) { rb.Labels = plugins.OwnershipLabels(contributors.Kind, name) })
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(carol), &rbacv1.RoleBinding{})
		return apierrors.IsNotFound(err), "the binding labelled as the plugin's is still there"
	})
	create(plain("fence-3"))
	fence.Wait(t, "fence-3")
	if got := wakes() - before; got != 2 {
		t.Errorf("the binding's ownership changing woke the plugin %v times in all, want 2", got)
	}
}
