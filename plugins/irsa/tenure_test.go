package irsa_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/irsa"
)

// TestNameDoesNotChangeHands: with the allowance a platform gives each team
// (a role templated on the namespace), alice's Profile is trusted by her
// team's role; her Profile is deleted, and mallory registers the name and
// names the same role. Mallory's Profile is a Conflict and the role never
// trusts her namespace, before and after the host restarts; alice coming
// back is trusted again; after an administrator releases the name,
// mallory's Profile is.
func TestNameDoesNotChangeHands(t *testing.T) {
	name := "irsa-tenure-" + rand.String(5)
	own := "kf-" + name
	spec := entry(`{"awsIamRole":"arn:aws:iam::111122223333:role/` + own + `"}`)
	store := &roles{docs: map[string]string{own: startPolicy}}
	defaults := `{"oidcProvider":"` + provider + `","allowedIdentities":[{"identity":"arn:aws:iam::111122223333:role/kf-{{ .Namespace }}"}]}`
	subject := "system:serviceaccount:" + name + ":default-editor"
	trusted := func() bool { return strings.Contains(store.doc(own), subject) }

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)

	t.Run("first host", func(st *testing.T) {
		identityHost(st, store, defaults)
		testhost.ProfileOf(t, env.Client, name, testhost.Alice, spec)
		testhost.WaitCondition(st, env.Client, name, condType, plugins.ConditionTrue, "")
		if !trusted() {
			st.Fatalf("alice's team role does not trust her namespace:\n%s", store.doc(own))
		}
		testhost.DeleteProfile(st, env.Client, name, 20*time.Second)
		if trusted() {
			st.Fatalf("the role trusts the namespace after alice's Profile went:\n%s", store.doc(own))
		}
		testhost.ProfileOf(t, env.Client, name, testhost.Mallory, spec)
		cond := testhost.WaitTenureConflict(st, env.Client, name, condType)
		st.Logf("mallory's Profile: %s=%s %s", condType, cond.Status, cond.Message)
		time.Sleep(time.Second)
		if trusted() {
			st.Errorf("alice's team role trusts mallory's namespace:\n%s", store.doc(own))
		}
	})

	t.Run("after a restart", func(st *testing.T) {
		before := testhost.Reconciles(st, irsa.Kind)
		identityHost(st, store, defaults)
		testhost.Eventually(st, 20*time.Second, func() (bool, string) {
			return testhost.Reconciles(st, irsa.Kind) > before, "the new host has not passed over the Profile"
		})
		testhost.WaitTenureConflict(st, env.Client, name, condType)
		if trusted() {
			st.Errorf("after a restart, alice's team role trusts mallory's namespace:\n%s", store.doc(own))
		}
		testhost.DeleteProfile(st, env.Client, name, 20*time.Second)

		testhost.ProfileOf(t, env.Client, name, testhost.Alice, spec)
		testhost.WaitCondition(st, env.Client, name, condType, plugins.ConditionTrue, "")
		if !trusted() {
			st.Errorf("alice's role does not trust her namespace again when she comes back:\n%s", store.doc(own))
		}
		testhost.DeleteProfile(st, env.Client, name, 20*time.Second)

		testhost.ReleaseName(st, env.Client, name)
		testhost.ProfileOf(t, env.Client, name, testhost.Mallory, spec)
		testhost.WaitCondition(st, env.Client, name, condType, plugins.ConditionTrue, "")
		if !trusted() {
			st.Errorf("after the release, the role does not trust mallory's namespace:\n%s", store.doc(own))
		}
	})
}
