package admission_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/outside"
)

// TestNameHeldForAnotherOwnerIsDenied: the name of a deleted team is held
// for its owner. Registering it as another owner is denied with the
// message the plugins' conditions would carry, naming neither the holder
// nor its Profile; the owner herself is admitted; and an edit that gives
// her Profile to another owner is denied.
func TestNameHeldForAnotherOwnerIsDenied(t *testing.T) {
	startHost(t, nil)
	cfg, _ := hostConfig(t, nil)
	records := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.RecordsNamespace()}}
	if err := env.Client.Create(t.Context(), records); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	name := unique("held")
	tenures := outside.Tenures{Reader: env.Client, Writer: env.Client, Namespace: records.Name}
	earlier := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-of-the-earlier-profile"},
		Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"}}}
	if err := tenures.Hold(t.Context(), earlier); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = tenures.Release(context.Background(), name) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	profile := func(owner string) []byte {
		return []byte("apiVersion: kubeflow.org/v1\nkind: Profile\nmetadata:\n  name: " + name + "\nspec:\n  owner:\n    kind: User\n    name: " + owner + "\n")
	}
	denied := func(err error, what string) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: admitted, want denied", what)
		case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "profilekit tenure release "+name):
			t.Errorf("%s: %v, want denied with how the name is handed over", what, err)
		case strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), string(earlier.UID)):
			t.Errorf("%s: the denial names the holder: %v", what, err)
		default:
			t.Logf("%s: %v", what, err)
		}
	}
	denied(apply(t, profileObject(t, profile("mallory@example.org"))), "mallory registering alice's name")
	if err := apply(t, profileObject(t, profile("alice@example.org"))); err != nil {
		t.Fatalf("alice registering her own name: %v", err)
	}
	denied(apply(t, profileObject(t, profile("mallory@example.org"))), "alice's Profile given to mallory")
}
