package reconcilers_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/rand"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestTenureIsOutOfTheTenantsReach: a tenant with Kubeflow's rights in its
// namespace can neither read, write nor delete the tenure of its Profile's
// name, and a copy it forges in its namespace is never read. A tenure a
// careless operator garbles holds the name for no one (fail closed: the
// owner's next Profile is a Conflict and nothing is called for it), until
// the operator releases the name.
func TestTenureIsOutOfTheTenantsReach(t *testing.T) {
	v := &vault{}
	testhost.Start(t, env, testhost.Plugin{Def: v.definition(), Options: []reconcilers.Option{reconcilers.WithResync(200 * time.Millisecond)}})
	name := "vault-tenure-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry("vault", ""))
	testhost.WaitCondition(t, env.Client, name, "VaultReady", plugins.ConditionTrue, "")
	key := client.ObjectKey{Namespace: outside.DefaultRecordsNamespace, Name: outside.TenureName(name)}
	var held corev1.ConfigMap
	if err := env.Client.Get(t.Context(), key, &held); err != nil {
		t.Fatalf("the tenure of the name: %v", err)
	}

	tenant := testhost.Tenant(t, env, name)
	if err := tenant.Get(t.Context(), key, &corev1.ConfigMap{}); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant reads the tenure: %v, want Forbidden", err)
	}
	forged := corev1ac.ConfigMap(key.Name, key.Namespace).WithData(map[string]string{"owner": "its own"})
	if err := tenant.Apply(t.Context(), forged, client.FieldOwner(outside.FieldManagerTenure), client.ForceOwnership); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant writes the tenure: %v, want Forbidden", err)
	}
	if err := tenant.Delete(t.Context(), held.DeepCopy()); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant deletes the tenure: %v, want Forbidden", err)
	}
	// A copy in the tenant's own namespace, with the host's labels.
	copied := corev1ac.ConfigMap(key.Name, name).WithLabels(held.Labels).WithData(map[string]string{"owner": "its own", "uid": "its own"})
	if err := tenant.Apply(t.Context(), copied, client.FieldOwner("tenant"), client.ForceOwnership); err != nil {
		t.Fatalf("the tenant writes its own ConfigMap: %v", err)
	}

	testhost.DeleteProfile(t, env.Client, name, 20*time.Second)
	if n := v.revokes.Load(); n != 1 {
		t.Errorf("revoked %d engines, want 1", n)
	}
	// A careless operator garbles the tenure.
	if err := env.Client.Get(t.Context(), key, &held); err != nil {
		t.Fatal(err)
	}
	held.Data = map[string]string{"owner": "not a hash"}
	if err := env.Client.Update(t.Context(), &held); err != nil {
		t.Fatal(err)
	}
	calls := v.calls.Load()
	testhost.ProfileOf(t, env.Client, name, testhost.DefaultOwner, entry("vault", ""))
	testhost.WaitTenureConflict(t, env.Client, name, "VaultReady")
	time.Sleep(time.Second)
	if n := v.calls.Load(); n != calls {
		t.Errorf("the vault was called %d times for a Profile whose name's tenure is garbled, want none", n-calls)
	}
	testhost.ReleaseName(t, env.Client, name)
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Annotations = map[string]string{plugins.AnnotationReverify: "released"}
	})
	testhost.WaitCondition(t, env.Client, name, "VaultReady", plugins.ConditionTrue, "")
	var again corev1.ConfigMap
	if err := env.Client.Get(t.Context(), key, &again); err != nil || again.Data["owner"] != outside.OwnerKey(&kubeflowv1.Profile{Spec: kubeflowv1.ProfileSpec{Owner: getProfile(t, name).Spec.Owner}}) {
		t.Errorf("after the release, the tenure %v (%v) is not the owner's", again.Data, err)
	}
}
