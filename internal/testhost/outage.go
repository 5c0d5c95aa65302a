package testhost

import (
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// DeleteHeld deletes the Profile named name while the outside system of
// plugin kind is down, and checks, 2 s later, that the Profile is still
// there with the plugin's finalizer: a deletion that cannot reach the
// outside system must wait for it.
func DeleteHeld(t *testing.T, c client.Client, name, kind string) {
	t.Helper()
	if err := c.Delete(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	var p kubeflowv1.Profile
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatalf("the Profile went during the outage: %v", err)
	}
	if !slices.Contains(p.Finalizers, plugins.FinalizerPrefix+kind) {
		t.Errorf("finalizers %v lack ours during the outage", p.Finalizers)
	}
}

// WaitProfileGone waits until the Profile named name is deleted.
func WaitProfileGone(t *testing.T, c client.Client, name string, within time.Duration) {
	t.Helper()
	Eventually(t, within, func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKey{Name: name}, &kubeflowv1.Profile{})
		return apierrors.IsNotFound(err), "the Profile is still there"
	})
}
