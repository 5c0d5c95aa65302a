package azureidentity_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/azureidentity"
	"github.com/profilekit/profilekit/plugins/outside"
)

var ref = azureidentity.IdentityRef{Subscription: sub, ResourceGroup: "kubeflow", Name: "team-a"}

// msi is Azure's side of the hostile tests: the federated credentials of
// one identity, by name, behind an outage switch.
type msi struct {
	mu    sync.Mutex
	creds map[string]azureidentity.Credential
	down  atomic.Bool
}

var errUnavailable = errors.New("503 Service Unavailable")

func (m *msi) get(_ context.Context, _ azureidentity.IdentityRef, name string) (azureidentity.Credential, bool, error) {
	if m.down.Load() {
		return azureidentity.Credential{}, false, errUnavailable
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.creds[name]
	return c, ok, nil
}

func (m *msi) put(_ context.Context, _ azureidentity.IdentityRef, name string, c azureidentity.Credential) error {
	if m.down.Load() {
		return errUnavailable
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.creds[name] = c
	return nil
}

func (m *msi) del(_ context.Context, _ azureidentity.IdentityRef, name string) error {
	if m.down.Load() {
		return errUnavailable
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.creds, name)
	return nil
}

func (m *msi) held() map[string]azureidentity.Credential {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.creds)
}

// hostile starts a host whose Azure is m, serving the given service accounts.
func hostile(t *testing.T, m *msi, serviceAccounts ...string) {
	t.Helper()
	if len(serviceAccounts) == 0 {
		serviceAccounts = []string{"default-editor"}
	}
	identityHost(t, m, `{`+allowed+`,"issuer":"`+issuer+`","serviceAccounts":["`+strings.Join(serviceAccounts, `","`)+`"]}`)
}

const spec = `{"identity":"` + identity + `","clientId":"` + clientID + `"}`

func ours(namespace, sa string) azureidentity.Credential {
	return azureidentity.Credential{Issuer: issuer, Subject: "system:serviceaccount:" + namespace + ":" + sa, Audiences: []string{azureidentity.DefaultAudience}}
}

// stopListing removes the plugin from the Profile and waits until Revoke
// let it go.
func stopListing(t *testing.T, name string) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return false, err.Error()
		}
		return len(p.Finalizers) == 0, "finalizers " + strings.Join(p.Finalizers, ",")
	})
}

func TestForeignCredentialWithOurNameIsAConflict(t *testing.T) {
	name := "az-foreign-" + rand.String(5)
	credName := azureidentity.CredentialName(name, "default-editor")
	// Another cluster's credential for a service account of the same name.
	foreign := azureidentity.Credential{Issuer: "https://oidc.example.org/other-cluster/", Subject: "system:serviceaccount:" + name + ":default-editor", Audiences: []string{azureidentity.DefaultAudience}}
	m := &msi{creds: map[string]azureidentity.Credential{credName: foreign}}
	hostile(t, m)
	testhost.NewProfile(t, env.Client, name, nil, entry(spec))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, plugins.ReasonConflict+": federated credential "+credName)
	if !strings.Contains(cond.Message, foreign.Issuer) {
		t.Errorf("condition %q does not say what is there", cond.Message)
	}
	stopListing(t, name)
	if diff := cmp.Diff(map[string]azureidentity.Credential{credName: foreign}, m.held()); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
}

// Our credential, recorded, changed in Azure but for its subject (an
// audience added by hand): a verifying pass puts it back as it was.
func TestOurCredentialChangedInAzureIsPutBack(t *testing.T) {
	m := &msi{creds: map[string]azureidentity.Credential{}}
	hostile(t, m)
	name := "az-edited-" + rand.String(5)
	credName := azureidentity.CredentialName(name, "default-editor")
	testhost.NewProfile(t, env.Client, name, nil, entry(spec))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	edited := ours(name, "default-editor")
	edited.Audiences = append(edited.Audiences, "api://someone-else")
	if err := m.put(t.Context(), ref, credName, edited); err != nil {
		t.Fatal(err)
	}
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, plugins.AnnotationReverify, "edited")
	})
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		got := m.held()[credName]
		return cmp.Equal(got, ours(name, "default-editor")), fmt.Sprintf("credential %+v", got)
	})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	stopListing(t, name)
}

func TestReplacedCredentialIsLeftOnRevoke(t *testing.T) {
	m := &msi{creds: map[string]azureidentity.Credential{}}
	hostile(t, m)
	name := "az-replaced-" + rand.String(5)
	credName := azureidentity.CredentialName(name, "default-editor")
	testhost.NewProfile(t, env.Client, name, nil, entry(spec))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if diff := cmp.Diff(map[string]azureidentity.Credential{credName: ours(name, "default-editor")}, m.held()); diff != "" {
		t.Fatalf("credentials after apply (-want +got):\n%s", diff)
	}
	replaced := ours("ops", "runner")
	m.mu.Lock()
	m.creds[credName] = replaced
	m.mu.Unlock()
	stopListing(t, name)
	if diff := cmp.Diff(map[string]azureidentity.Credential{credName: replaced}, m.held()); diff != "" {
		t.Errorf("credentials after revoke (-want +got):\n%s", diff)
	}
}

// Under the names before CredentialName's scheme, x-y's service account z
// and x's service account y-z shared profilekit-x-y-z.
func TestCraftedNamesDoNotMeet(t *testing.T) {
	m := &msi{creds: map[string]azureidentity.Credential{}}
	hostile(t, m, "z", "y-z")
	x := "az-col-" + rand.String(5)
	xy := x + "-y"
	for _, ns := range []string{x, xy} {
		testhost.NewProfile(t, env.Client, ns, nil, entry(spec))
		testhost.CreateServiceAccount(t, env.Client, ns, "z", nil)
		testhost.CreateServiceAccount(t, env.Client, ns, "y-z", nil)
	}
	for _, ns := range []string{x, xy} {
		testhost.WaitCondition(t, env.Client, ns, condType, plugins.ConditionTrue, "")
	}
	want := map[string]azureidentity.Credential{}
	for _, ns := range []string{x, xy} {
		for _, sa := range []string{"z", "y-z"} {
			want[azureidentity.CredentialName(ns, sa)] = ours(ns, sa)
		}
	}
	if diff := cmp.Diff(want, m.held()); diff != "" {
		t.Fatalf("credentials of both Profiles (-want +got):\n%s", diff)
	}
	stopListing(t, xy)
	delete(want, azureidentity.CredentialName(xy, "z"))
	delete(want, azureidentity.CredentialName(xy, "y-z"))
	if diff := cmp.Diff(want, m.held()); diff != "" {
		t.Errorf("credentials after revoking %s (-want +got):\n%s", xy, diff)
	}
	stopListing(t, x)
	if got := m.held(); len(got) != 0 {
		t.Errorf("credentials left: %v", slices.Sorted(maps.Keys(got)))
	}
}

func TestOutageDuringDeletionHoldsTheProfile(t *testing.T) {
	m := &msi{creds: map[string]azureidentity.Credential{}}
	hostile(t, m)
	name := "az-outage-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(spec))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	m.down.Store(true)
	testhost.DeleteHeld(t, env.Client, name, azureidentity.Kind)
	if got := m.held(); len(got) != 1 {
		t.Errorf("credentials during the outage = %v, want ours still there", got)
	}
	m.down.Store(false)
	testhost.WaitProfileGone(t, env.Client, name, 30*time.Second)
	if got := m.held(); len(got) != 0 {
		t.Errorf("credentials after the outage: %v", slices.Sorted(maps.Keys(got)))
	}
}

// A credential the previous naming scheme made, which the host's record
// holds as made, is replaced by one of the current name; one the record
// does not hold is someone else's and stays.
func TestRecordedLegacyCredentialIsRenamed(t *testing.T) {
	name := "az-legacy-" + rand.String(5)
	legacy, unrecorded := "profilekit-"+name+"-default-editor", "profilekit-"+name+"-runner"
	m := &msi{creds: map[string]azureidentity.Credential{legacy: ours(name, "default-editor"), unrecorded: ours(name, "runner")}}
	hostile(t, m, "default-editor", "runner")
	p := testhost.NewProfile(t, env.Client, name, nil)
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.CreateServiceAccount(t, env.Client, name, "runner", nil)
	testhost.WriteRecord(t, env.Client, azureidentity.Kind, p, `{"credential/`+sub+`/kubeflow/team-a/`+legacy+`":{"hash":"0","at":"2026-01-01T00:00:00Z"}}`)
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = []kubeflowv1.Plugin{entry(spec)} })
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	want := map[string]azureidentity.Credential{
		azureidentity.CredentialName(name, "default-editor"): ours(name, "default-editor"),
		azureidentity.CredentialName(name, "runner"):         ours(name, "runner"),
		unrecorded: ours(name, "runner"),
	}
	if diff := cmp.Diff(want, m.held()); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
	stopListing(t, name)
	if diff := cmp.Diff(map[string]azureidentity.Credential{unrecorded: ours(name, "runner")}, m.held()); diff != "" {
		t.Errorf("credentials after revoke (-want +got):\n%s", diff)
	}
}

// A credential is recorded before it is put: while the record cannot be
// written, nothing is put, so a pass that stops between the put and the
// record (the host stops, the record's write is refused) cannot leave a
// credential that nothing removes once the Profile lets it go.
func TestCredentialIsRecordedBeforeItIsPut(t *testing.T) {
	m := &msi{creds: map[string]azureidentity.Credential{}}
	name := "az-ahead-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, nil, entry(spec))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	lift := testhost.RefuseRecords(t, env.Client, p)
	hostile(t, m)
	testhost.WaitRecordRefused(t, env.Client, name, condType)
	time.Sleep(time.Second) // retries meanwhile
	if got := m.held(); len(got) != 0 {
		t.Errorf("credentials put while no record could say so: %v", slices.Sorted(maps.Keys(got)))
	}

	lift()
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	credName := azureidentity.CredentialName(name, "default-editor")
	if diff := cmp.Diff(map[string]azureidentity.Credential{credName: ours(name, "default-editor")}, m.held()); diff != "" {
		t.Errorf("credentials once the record can be written (-want +got):\n%s", diff)
	}
	stopListing(t, name)
	if got := m.held(); len(got) != 0 {
		t.Errorf("credentials after the Profile let the plugin go: %v", slices.Sorted(maps.Keys(got)))
	}
}

// TestRevokeFailsClosedWithoutARecord: the record of what the plugin put is
// lost and the Profile is deleted. Revoke still deletes the credentials of
// the identity it names that are exactly what the plugin puts for its
// namespace, so that no service account of the next Profile of the name
// acts as the identity; a credential of another cluster's issuer under our
// name stays.
func TestRevokeFailsClosedWithoutARecord(t *testing.T) {
	m := &msi{creds: map[string]azureidentity.Credential{}}
	hostile(t, m, "default-editor", "runner")
	name := "az-lost-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, nil, entry(spec))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.CreateServiceAccount(t, env.Client, name, "runner", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	runner := azureidentity.CredentialName(name, "runner")
	other := azureidentity.Credential{Issuer: "https://oidc.example.org/other-cluster/", Subject: "system:serviceaccount:" + name + ":runner", Audiences: []string{azureidentity.DefaultAudience}}
	m.mu.Lock()
	m.creds[runner] = other
	m.mu.Unlock()
	testhost.LoseRecord(t, env.Client, azureidentity.Kind, p)
	if err := env.Client.Delete(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	testhost.WaitProfileGone(t, env.Client, name, 20*time.Second)
	if diff := cmp.Diff(map[string]azureidentity.Credential{runner: other}, m.held()); diff != "" {
		t.Errorf("credentials after the deletion (-want +got):\n%s", diff)
	}
	// The credential left trusts the namespace: dangling trust, which holds
	// the next Profile of the name.
	var dangling corev1.ConfigMap
	key := client.ObjectKey{Namespace: outside.DefaultRecordsNamespace, Name: outside.DanglingName(azureidentity.Kind, name)}
	if err := env.Client.Get(t.Context(), key, &dangling); err != nil || !strings.Contains(dangling.Data["grants"], runner) {
		t.Fatalf("dangling-trust record: %v, %v; want it to name %s", dangling.Data, err, runner)
	}
	// The owner's next Profile of the name: another owner's would not
	// even run the plugin (the name is held for the owner).
	next := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeflowv1.ProfileSpec{
		Owner:   rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: testhost.DefaultOwner},
		Plugins: []kubeflowv1.Plugin{entry(spec)}}}
	if err := env.Client.Create(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, outside.ReasonDanglingTrust)
	if got := m.held(); len(got) != 1 {
		t.Errorf("credentials put for the next Profile of the name: %v", got)
	}
	if err := env.Client.Delete(t.Context(), &dangling); err != nil {
		t.Fatal(err)
	}
	stopListing(t, name)
	if err := env.Client.Delete(t.Context(), next); err != nil {
		t.Fatal(err)
	}
}

// TestTenantCannotPointItsServiceAccountElsewhere: a tenant with Kubeflow's
// rights in its namespace points default-editor at another identity's
// client ID and writes a record of the earlier place and form that names a
// credential of another identity. The annotation is put back, and nothing
// the forgery names is deleted when the plugin goes.
func TestTenantCannotPointItsServiceAccountElsewhere(t *testing.T) {
	m := &msi{creds: map[string]azureidentity.Credential{}}
	hostile(t, m)
	name := "az-tenant-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(spec))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	victim := "profilekit-victim_default-editor"
	m.mu.Lock()
	m.creds[victim] = ours("victim", "default-editor")
	m.mu.Unlock()

	tenant := testhost.Tenant(t, env, name)
	var sa corev1.ServiceAccount
	if err := tenant.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "default-editor"}, &sa); err != nil {
		t.Fatal(err)
	}
	sa.Annotations[azureidentity.AnnotationClientID] = "22222222-2222-2222-2222-222222222222"
	if err := tenant.Update(t.Context(), &sa); err != nil {
		t.Fatalf("the tenant edits its service account: %v", err)
	}
	testhost.ForgeRecord(t, tenant, azureidentity.Kind, name,
		`{"credential/`+sub+`/kubeflow/team-a/`+victim+`":{"hash":"0123456789abcdef01234567","at":"2026-01-01T00:00:00Z"}}`)
	testhost.WaitServiceAccount(t, env.Client, name, "default-editor", func(sa *corev1.ServiceAccount) (bool, string) {
		return sa.Annotations[azureidentity.AnnotationClientID] == clientID, "annotation " + sa.Annotations[azureidentity.AnnotationClientID]
	})
	stopListing(t, name)
	if _, ok := m.held()[victim]; !ok {
		t.Errorf("the credential the forged record names was deleted: %v", m.held())
	}
}
