package testhost

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// Owners of the Profiles of tests in which a name changes hands.
const (
	Alice   = "alice@example.org"
	Mallory = "mallory@example.org"
)

// ProfileOf creates a Profile named name owned by the user owner, with the
// given plugins, in a namespace that already exists (a test that deletes a
// Profile keeps its namespace, as Kubeflow's registration may meet one
// being deleted). It is deleted when the test ends.
func ProfileOf(t *testing.T, c client.Client, name, owner string, ps ...kubeflowv1.Plugin) *kubeflowv1.Profile {
	t.Helper()
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacUser(owner), Plugins: ps},
	}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatalf("create the Profile %s of %s: %v", name, owner, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), p) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	return p
}

// DeleteProfile deletes the Profile named name and waits until it is gone:
// every finalizer's Revoke done.
func DeleteProfile(t *testing.T, c client.Client, name string, within time.Duration) {
	t.Helper()
	if err := c.Delete(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("delete the Profile %s: %v", name, err)
	}
	WaitProfileGone(t, c, name, within)
}

// WaitTenureConflict waits until the plugin's condition on the Profile
// named name is False with the reason Conflict and a message that refers
// to the name's tenure, and that message names no owner of the test.
func WaitTenureConflict(t *testing.T, c client.Client, name, condType string) kubeflowv1.ProfileCondition {
	t.Helper()
	cond := WaitCondition(t, c, name, condType, plugins.ConditionFalse, plugins.ReasonConflict)
	if !strings.Contains(cond.Message, "profilekit tenure release "+name) {
		t.Errorf("%s: %q does not say how the name is handed over", condType, cond.Message)
	}
	for _, who := range []string{Alice, Mallory} {
		if strings.Contains(cond.Message, who) {
			t.Errorf("%s names an owner (%s): %q", condType, who, cond.Message)
		}
	}
	return cond
}

// ReleaseName hands the name over as an administrator does: it deletes the
// name's tenure record in the default records' namespace.
func ReleaseName(t *testing.T, c client.Client, name string) {
	t.Helper()
	released, err := outside.Tenures{Reader: c, Writer: c}.Release(t.Context(), name)
	if err != nil || !released {
		t.Fatalf("release the name %s: released %v, %v", name, released, err)
	}
}
