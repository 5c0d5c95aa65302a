package reconcilers_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
	"github.com/profilekit/profilekit/reconcilers"
)

// waitRevokes waits until the Profile has no finalizer left and returns how
// many engines the vault revoked.
func waitRevokes(t *testing.T, v *vault, name string) int32 {
	t.Helper()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		p := getProfile(t, name)
		return len(p.Finalizers) == 0, fmt.Sprintf("finalizers %v", p.Finalizers)
	})
	return v.revokes.Load()
}

// TestTenantCannotForgeTheOutsideRecord: a tenant with Kubeflow's rights in
// its namespace writes a record of the earlier place and form there, under
// the plugin's own field manager, naming an engine it was never given (some
// other team's), and tries to read and write the host's record. The host
// never reads the forgery, the tenant reaches nothing of the host's, and
// the revoke removes only what the host made for the Profile.
func TestTenantCannotForgeTheOutsideRecord(t *testing.T) {
	v := &vault{}
	testhost.Start(t, env, testhost.Plugin{Def: v.definition(), Options: []reconcilers.Option{reconcilers.WithResync(200 * time.Millisecond)}})
	name := "vault-tenant-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, nil, entry("vault", ""))
	testhost.WaitCondition(t, env.Client, name, "VaultReady", plugins.ConditionTrue, "")

	tenant := testhost.Tenant(t, env, name)
	testhost.ForgeRecord(t, tenant, "vault", name,
		`{"engine":{"hash":"0123456789abcdef01234567","at":"2026-01-01T00:00:00Z"},"engine/other-team":{"hash":"0123456789abcdef01234567","at":"2026-01-01T00:00:00Z"}}`)
	key := testhost.RecordKey("vault", p)
	if err := tenant.Get(t.Context(), key, &corev1.ConfigMap{}); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant reads the host's record: %v, want Forbidden", err)
	}
	forged := corev1ac.ConfigMap(key.Name, key.Namespace).WithData(map[string]string{"state.json": `{}`})
	if err := tenant.Apply(t.Context(), forged, client.FieldOwner(plugins.FieldManagerFor("vault")), client.ForceOwnership); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant writes the host's record: %v, want Forbidden", err)
	}
	// A pass with the forgery in place, then the revoke.
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Annotations = map[string]string{plugins.AnnotationReverify: "after-the-forgery"}
	})
	testhost.WaitCondition(t, env.Client, name, "VaultReady", plugins.ConditionTrue, "")
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	if n := waitRevokes(t, v, name); n != 1 {
		t.Errorf("revoked %d engines, want 1: only the one the host made for the Profile", n)
	}
}

// TestRecordsOfEarlierVersionsAreMoved: a record that an earlier version
// kept in the Profile's namespace is moved into the host's namespace at
// start and its copy deleted; what it names is made true again (it is not
// proof, the tenant could have written it) and, fail closed, removed with
// the plugin, also what the Profile no longer names.
func TestRecordsOfEarlierVersionsAreMoved(t *testing.T) {
	ctx := t.Context()
	records := "records-" + rand.String(5)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: records}}); err != nil {
		t.Fatal(err)
	}
	name := "vault-moved-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, nil)
	labels := plugins.OwnershipLabels("vault", name)
	labels[plugins.LabelRole] = plugins.RoleOutsideState
	// Written as every earlier version wrote it.
	old := corev1ac.ConfigMap(outside.StateName("vault"), name).WithLabels(labels).WithOwnerReferences(plugins.OwnerReference(p)).
		WithData(map[string]string{"state.json": `{"engine":{"hash":"0123456789abcdef01234567","at":"2026-01-01T00:00:00Z"},"engine/retired":{"hash":"0123456789abcdef01234567","at":"2026-01-01T00:00:00Z"}}`})
	if err := env.Client.Apply(ctx, old, client.FieldOwner(plugins.FieldManagerFor("vault")), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}

	moved, err := outside.MigrateRecords(ctx, env.Client, env.Client, records)
	if err != nil || moved != 1 {
		t.Fatalf("MigrateRecords = %d, %v; want 1 record moved", moved, err)
	}
	if ok, _ := exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: outside.StateName("vault")}}); ok {
		t.Error("the copy in the Profile's namespace outlived the move")
	}
	v := &vault{}
	testhost.Start(t, env, testhost.Plugin{Def: v.definition(), Options: []reconcilers.Option{
		reconcilers.WithOutside(outside.Options{Namespace: records})}})
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = []kubeflowv1.Plugin{entry("vault", "")} })
	testhost.WaitCondition(t, env.Client, name, "VaultReady", plugins.ConditionTrue, "")
	if n := v.calls.Load(); n != 1 {
		t.Errorf("%d calls after the move, want 1: a moved key is no proof that the engine is there", n)
	}
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	if n := waitRevokes(t, v, name); n != 2 {
		t.Errorf("revoked %d engines, want 2: the engine and the retired one the moved record names", n)
	}
}
