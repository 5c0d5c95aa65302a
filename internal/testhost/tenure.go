package testhost

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// HandOver is a test of one plugin with outside state in which a name
// changes hands: alice's Profile is granted, and deleted; mallory registers
// the name and asks for the same: a Conflict, and nothing granted, before
// and after the host restarts; alice coming back is granted again; after an
// administrator releases the name, mallory's Profile is granted.
type HandOver struct {
	// Client is the test environment's, with every right.
	Client client.Client
	// Name is the Profile's name; its namespace is made by Run.
	Name string
	// Kind and CondType are the plugin's.
	Kind, CondType string
	// Entry is the plugin's spec.plugins entry for both Profiles.
	Entry kubeflowv1.Plugin
	// Start starts a host of the plugin, stopped when the test it is given
	// ends.
	Start func(t *testing.T)
	// Granted reports whether the outside system grants the namespace (a
	// trust, a binding, a mount), with what it holds to show.
	Granted func(t *testing.T) (bool, string)
}

// Run runs the hand-over in subtests of t, "first host" and "after a
// restart".
func (h HandOver) Run(t *testing.T) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.Name}}
	c := h.Client
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	CreateServiceAccount(t, c, h.Name, "default-editor", nil)
	granted := func(t *testing.T, want bool, who string) {
		t.Helper()
		if got, state := h.Granted(t); got != want {
			t.Errorf("%s: granted %v, want %v; the outside system holds:\n%s", who, got, want, state)
		}
	}
	t.Run("first host", func(st *testing.T) {
		h.Start(st)
		ProfileOf(t, c, h.Name, Alice, h.Entry)
		WaitCondition(st, c, h.Name, h.CondType, plugins.ConditionTrue, "")
		granted(st, true, "alice's Profile")
		DeleteProfile(st, c, h.Name, 20*time.Second)
		granted(st, false, "after alice's Profile went")
		ProfileOf(t, c, h.Name, Mallory, h.Entry)
		cond := WaitTenureConflict(st, c, h.Name, h.CondType)
		st.Logf("mallory's Profile of the name: %s=%s %s", h.CondType, cond.Status, cond.Message)
		time.Sleep(time.Second)
		granted(st, false, "mallory's Profile of alice's name")
	})
	t.Run("after a restart", func(st *testing.T) {
		before := Reconciles(st, h.Kind)
		h.Start(st)
		Eventually(st, 20*time.Second, func() (bool, string) {
			return Reconciles(st, h.Kind) > before, "the new host has not passed over the Profile"
		})
		WaitTenureConflict(st, c, h.Name, h.CondType)
		granted(st, false, "mallory's Profile after a restart")
		DeleteProfile(st, c, h.Name, 20*time.Second)
		granted(st, false, "after mallory's Profile went")

		ProfileOf(t, c, h.Name, Alice, h.Entry)
		WaitCondition(st, c, h.Name, h.CondType, plugins.ConditionTrue, "")
		granted(st, true, "alice's Profile when she comes back")
		DeleteProfile(st, c, h.Name, 20*time.Second)

		ReleaseName(st, c, h.Name)
		ProfileOf(t, c, h.Name, Mallory, h.Entry)
		WaitCondition(st, c, h.Name, h.CondType, plugins.ConditionTrue, "")
		granted(st, true, "mallory's Profile after the release")
	})
}

// CurrentCondition waits until the Profile's condition of type ct describes
// the Profile's generation, whatever it says, and returns it.
func CurrentCondition(t *testing.T, c client.Client, name, ct string) kubeflowv1.ProfileCondition {
	t.Helper()
	var got kubeflowv1.ProfileCondition
	Eventually(t, 20*time.Second, func() (bool, string) {
		var p kubeflowv1.Profile
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return false, err.Error()
		}
		if cond := plugins.FindCondition(p.Status.Conditions, ct); cond != nil && cond.ObservedGeneration == p.Generation {
			got = *cond
			return true, ""
		}
		return false, "no " + ct + " condition of the Profile's generation yet"
	})
	return got
}
