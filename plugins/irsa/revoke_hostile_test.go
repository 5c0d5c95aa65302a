package irsa_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/irsa/iammock"
	"github.com/profilekit/profilekit/plugins/irsa/trustpolicy"
	"github.com/profilekit/profilekit/plugins/outside"
	"github.com/profilekit/profilekit/reconcilers"
)

// A pass that makes a role trust the Profile and then cannot record it
// (the host stops, the record's write is refused) must not leave the
// statement behind once the Profile names another role: its service
// accounts would keep a role nobody gives them. The record is written
// before IAM is; while it cannot be, IAM is not written at all.
func TestTrustIsRecordedBeforeIAMIsWritten(t *testing.T) {
	const other = "other-role"
	otherARN := strings.TrimSuffix(roleARN, role) + other
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	iam := iammock.NewMockIAM(ctrl)
	store := &roles{docs: map[string]string{role: startPolicy, other: startPolicy}}
	for _, r := range []string{role, other} {
		iam.EXPECT().TrustPolicy(gomock.Any(), r).DoAndReturn(store.get).AnyTimes()
		iam.EXPECT().SetTrustPolicy(gomock.Any(), r, gomock.Any()).DoAndReturn(store.set).AnyTimes()
	}
	name := "irsa-ahead-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	// The Profile's record cannot be written.
	refuse := testhost.RefuseRecords(t, env.Client, p)
	testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(iam), Options: []reconcilers.Option{
		allow(`,"oidcProvider":"` + provider + `"`)}})
	testhost.WaitRecordRefused(t, env.Client, name, condType)
	time.Sleep(time.Second) // retries meanwhile
	sid := trustpolicy.StatementID(provider, name)
	if strings.Contains(store.doc(role), sid) {
		t.Errorf("%s trusts the Profile while no record says so", role)
	}

	// The Profile names another role, and the record can be written again.
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Spec.Plugins = []kubeflowv1.Plugin{entry(`{"awsIamRole":"` + otherARN + `"}`)}
	})
	refuse()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		return strings.Contains(store.doc(other), sid), other + " does not trust the Profile yet"
	})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if strings.Contains(store.doc(role), sid) {
		t.Errorf("%s still trusts the Profile, which names %s now:\n%s", role, other, store.doc(role))
	}
	stopListing(t, name) // while this host runs, so that no later test's meets the Profile
	ctrl.Finish()
}

// TestRevokeFailsClosedWithoutARecord: the record of what the plugin made
// is lost (an administrator's mistake, a restore, a record moved from an
// earlier version's that the tenant had edited) and the Profile is
// deleted. Revoke still removes the Profile's statement from the role it
// names, found by its Sid: a grant is never left behind for the next
// Profile of the name to inherit.
func TestRevokeFailsClosedWithoutARecord(t *testing.T) {
	o := hostile(t, startPolicy, "")
	name := "irsa-lost-" + rand.String(5)
	trusted(t, name)
	sid := trustpolicy.StatementID(provider, name)
	if !strings.Contains(o.roles.doc(role), sid) {
		t.Fatalf("the role does not trust the Profile:\n%s", o.roles.doc(role))
	}
	testhost.LoseRecordAndDelete(t, env.Client, irsa.Kind, name)
	testhost.WaitProfileGone(t, env.Client, name, 20*time.Second)
	if strings.Contains(o.roles.doc(role), sid) {
		t.Errorf("the role still trusts the Profile after the revoke:\n%s", o.roles.doc(role))
	}
}

// TestDanglingTrustHoldsTheNextProfileOfTheName: a statement someone else
// wrote trusts the namespace's service account. When the Profile is
// deleted, it stays (it is not the plugin's) and is reported as dangling
// trust; the next Profile of the name is refused the role while it is
// recorded, with a condition naming it.
func TestDanglingTrustHoldsTheNextProfileOfTheName(t *testing.T) {
	name := "irsa-dangle-" + rand.String(5)
	doc := `{"Version":"2012-10-17","Statement":[` + legacy(name) + `]}`
	o := hostile(t, doc, "")
	trusted(t, name)
	var p kubeflowv1.Profile
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), &p); err != nil {
		t.Fatal(err)
	}
	testhost.WaitProfileGone(t, env.Client, name, 20*time.Second)
	if got := o.roles.doc(role); got != doc {
		t.Errorf("someone else's statement was changed: %s", got)
	}
	key := client.ObjectKey{Namespace: outside.DefaultRecordsNamespace, Name: outside.DanglingName(irsa.Kind, name)}
	var dangling corev1.ConfigMap
	if err := env.Client.Get(t.Context(), key, &dangling); err != nil {
		t.Fatalf("no dangling-trust record after the deletion: %v", err)
	}
	t.Logf("dangling trust recorded: %v", dangling.Data)

	// The owner's next Profile of the name: another owner's would not
	// even run the plugin (the name is held for the owner).
	next := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeflowv1.ProfileSpec{
		Owner:   rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: testhost.DefaultOwner},
		Plugins: []kubeflowv1.Plugin{entry(`{"awsIamRole":"` + roleARN + `"}`)}}}
	if err := env.Client.Create(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, outside.ReasonDanglingTrust)
	if !strings.Contains(cond.Message, "system:serviceaccount:"+name+":default-editor") {
		t.Errorf("condition %q does not name the grant", cond.Message)
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
// rights in its namespace points default-editor at another team's role and
// writes a record of the earlier place and form that names that role. The
// annotation is put back, and IAM is never asked about the other role (the
// mock fails the test on any call for it), not even by the revoke.
func TestTenantCannotPointItsServiceAccountElsewhere(t *testing.T) {
	hostile(t, startPolicy, "")
	name := "irsa-tenant-" + rand.String(5)
	trusted(t, name)
	otherARN := strings.TrimSuffix(roleARN, role) + "other-team"
	tenant := testhost.Tenant(t, env, name)
	var sa corev1.ServiceAccount
	if err := tenant.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "default-editor"}, &sa); err != nil {
		t.Fatal(err)
	}
	sa.Annotations[irsa.AnnotationRoleARN] = otherARN
	if err := tenant.Update(t.Context(), &sa); err != nil {
		t.Fatalf("the tenant edits its service account: %v", err)
	}
	testhost.ForgeRecord(t, tenant, irsa.Kind, name, `{"role/other-team":{"hash":"0123456789abcdef01234567","at":"2026-01-01T00:00:00Z"}}`)
	testhost.WaitServiceAccount(t, env.Client, name, "default-editor", func(sa *corev1.ServiceAccount) (bool, string) {
		return sa.Annotations[irsa.AnnotationRoleARN] == roleARN, "annotation " + sa.Annotations[irsa.AnnotationRoleARN]
	})
	stopListing(t, name)
}
