package workloadidentity_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/mock/gomock"
	iam "google.golang.org/api/iam/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
	"github.com/profilekit/profilekit/plugins/workloadidentity/iammock"
	"github.com/profilekit/profilekit/reconcilers"
)

// outage stands between the plugin and the account: while down, every call
// fails as an unreachable API would.
type outage struct {
	down atomic.Bool
	acct *account
}

var errUnavailable = errors.New("googleapi: Error 503: the service is currently unavailable")

func (o *outage) get(ctx context.Context, r string) (*iam.Policy, error) {
	if o.down.Load() {
		return nil, errUnavailable
	}
	return o.acct.get(ctx, r)
}

func (o *outage) set(ctx context.Context, r string, p *iam.Policy) error {
	if o.down.Load() {
		return errUnavailable
	}
	return o.acct.set(ctx, r, p)
}

// hostile starts a host whose IAM is acct behind an outage switch.
func hostile(t *testing.T, acct *account) *outage {
	t.Helper()
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	api := iammock.NewMockIAM(ctrl)
	o := &outage{acct: acct}
	api.EXPECT().Policy(gomock.Any(), resource).DoAndReturn(o.get).AnyTimes()
	api.EXPECT().SetPolicy(gomock.Any(), resource, gomock.Any()).DoAndReturn(o.set).AnyTimes()
	testhost.Start(t, env, testhost.Plugin{Def: workloadidentity.Definition(api), Options: []reconcilers.Option{allow("")}})
	return o
}

// profileWithGrant makes a Profile that names gsa, with its service
// account, and waits until the plugin is done with it.
func profileWithGrant(t *testing.T, prefix string) (name, member string) {
	t.Helper()
	name = prefix + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	return name, "serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"
}

// stopListing removes the plugin from the Profile and waits until Revoke
// let it go.
func stopListing(t *testing.T, name string) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		var p kubeflowv1.Profile
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &p); err != nil {
			return false, err.Error()
		}
		return len(p.Finalizers) == 0, "finalizers " + strings.Join(p.Finalizers, ",")
	})
}

func TestMemberGrantedBeforeUsIsNeverRevoked(t *testing.T) {
	name := "wi-foreign-" + rand.String(5)
	member := "serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"
	before := []*iam.Binding{{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{admin, member}}}
	acct := &account{policy: &iam.Policy{Etag: "e", Bindings: before}}
	hostile(t, acct)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	stopListing(t, name)
	if diff := cmp.Diff(before, acct.bindings()); diff != "" {
		t.Errorf("bindings after revoke (-want +got):\n%s", diff)
	}
	acct.mu.Lock()
	defer acct.mu.Unlock()
	if acct.writes != 0 {
		t.Errorf("the policy was written %d times, want never", acct.writes)
	}
}

func TestConditionalBindingStays(t *testing.T) {
	name := "wi-cond-" + rand.String(5)
	member := "serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"
	cond := &iam.Binding{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{member},
		Condition: &iam.Expr{Title: "office hours", Expression: `request.time.getHours("Europe/Berlin") < 18`}}
	acct := &account{policy: &iam.Policy{Etag: "e", Version: 3, Bindings: []*iam.Binding{cond}}}
	hostile(t, acct)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	want := []*iam.Binding{cond, {Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{member}}}
	if diff := cmp.Diff(want, acct.bindings()); diff != "" {
		t.Errorf("bindings after apply (-want +got):\n%s", diff)
	}
	stopListing(t, name)
	if diff := cmp.Diff([]*iam.Binding{cond}, acct.bindings()); diff != "" {
		t.Errorf("bindings after revoke (-want +got):\n%s", diff)
	}
}

// A member someone else granted first and later took away becomes ours on
// the next verification, and is then removed with the Profile.
func TestForeignMemberTakenAwayBecomesOurs(t *testing.T) {
	name := "wi-gone-" + rand.String(5)
	member := "serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"
	acct := &account{policy: &iam.Policy{Etag: "e", Bindings: []*iam.Binding{{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{member}}}}}
	hostile(t, acct)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	acct.mu.Lock()
	acct.policy.Bindings = nil
	acct.mu.Unlock()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Annotations = map[string]string{plugins.AnnotationReverify: "1"}
	})
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		return workloadidentity.HasMembers(&iam.Policy{Bindings: acct.bindings()}, workloadidentity.RoleWorkloadIdentityUser, []string{member}),
			"member not granted again"
	})
	stopListing(t, name)
	if got := acct.bindings(); len(got) != 0 {
		t.Errorf("bindings after revoke = %+v, want none: the member was ours", got)
	}
}

func TestOutageDuringDeletionHoldsTheProfile(t *testing.T) {
	acct := &account{policy: &iam.Policy{Etag: "e", Bindings: []*iam.Binding{{Role: "roles/iam.serviceAccountTokenCreator", Members: []string{admin}}}}}
	o := hostile(t, acct)
	name, member := profileWithGrant(t, "wi-outage-")

	o.down.Store(true)
	testhost.DeleteHeld(t, env.Client, name, workloadidentity.Kind)
	if !workloadidentity.HasMembers(&iam.Policy{Bindings: acct.bindings()}, workloadidentity.RoleWorkloadIdentityUser, []string{member}) {
		t.Errorf("the member went during the outage")
	}

	o.down.Store(false)
	testhost.WaitProfileGone(t, env.Client, name, 30*time.Second)
	want := []*iam.Binding{{Role: "roles/iam.serviceAccountTokenCreator", Members: []string{admin}}}
	if diff := cmp.Diff(want, acct.bindings()); diff != "" {
		t.Errorf("bindings after the outage (-want +got):\n%s", diff)
	}
}

// TestTenantForgedRecordRevokesNothing: a tenant with Kubeflow's rights in
// its namespace writes a record of the earlier place and form there, under
// the plugin's own field manager, that claims as ours a member someone else
// granted. The host never reads it (its record is in the host's namespace,
// which the tenant can neither read nor write), so the grant is not revoked.
func TestTenantForgedRecordRevokesNothing(t *testing.T) {
	name := "wi-forge-" + rand.String(5)
	member := "serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"
	before := []*iam.Binding{{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{admin, member}}}
	acct := &account{policy: &iam.Policy{Etag: "e", Bindings: before}}
	hostile(t, acct)
	p := testhost.NewProfile(t, env.Client, name, nil, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	var cm corev1.ConfigMap
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		if err := env.Client.Get(t.Context(), testhost.RecordKey(workloadidentity.Kind, p), &cm); err != nil {
			return false, err.Error()
		}
		return strings.Contains(cm.Data["state.json"], "foreign/"), "record " + cm.Data["state.json"]
	})
	tenant := testhost.Tenant(t, env, name)
	if err := tenant.Get(t.Context(), client.ObjectKeyFromObject(&cm), &corev1.ConfigMap{}); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant reads the host's record: %v, want Forbidden", err)
	}
	testhost.ForgeRecord(t, tenant, workloadidentity.Kind, name, `{"grant/`+gsa+`/`+member+`":{"hash":"0123456789abcdef01234567","at":"2026-01-01T00:00:00Z"}}`)

	stopListing(t, name)
	if diff := cmp.Diff(before, acct.bindings()); diff != "" {
		t.Errorf("bindings after revoke with a record the tenant forged (-want +got):\n%s", diff)
	}
}

// A grant is recorded before it is made, once the policy shows the member
// is not someone else's: while the record cannot be written, the policy is
// not. Otherwise a grant made by a pass that could not record it reads, on
// the next pass, as someone else's grant, and the Profile's service
// account keeps the account after the Profile lets it go.
func TestGrantIsRecordedBeforeItIsMade(t *testing.T) {
	acct := &account{policy: &iam.Policy{Etag: "e"}}
	name := "wi-ahead-" + rand.String(5)
	member := "serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"
	p := testhost.NewProfile(t, env.Client, name, nil, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	lift := testhost.RefuseRecords(t, env.Client, p)
	hostile(t, acct)
	testhost.WaitRecordRefused(t, env.Client, name, condType)
	time.Sleep(time.Second) // retries meanwhile
	acct.mu.Lock()
	writes := acct.writes
	acct.mu.Unlock()
	if writes != 0 || len(acct.bindings()) != 0 {
		t.Errorf("the policy was written %d times while no record could say so: %s", writes, membersOf(acct.bindings()))
	}

	lift()
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	want := []*iam.Binding{{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{member}}}
	if diff := cmp.Diff(want, acct.bindings()); diff != "" {
		t.Errorf("bindings once the record can be written (-want +got):\n%s", diff)
	}
	stopListing(t, name)
	if got := acct.bindings(); slices.ContainsFunc(got, func(b *iam.Binding) bool { return slices.Contains(b.Members, member) }) {
		t.Errorf("the Profile's service account still holds the role after the Profile let the plugin go: %s", membersOf(got))
	}
}

// membersOf lists each binding's role and members.
func membersOf(bs []*iam.Binding) string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Role+" "+strings.Join(b.Members, ","))
	}
	return strings.Join(out, "; ")
}

// TestRevokeFailsClosedWithoutARecord: the record of what the plugin
// granted is lost and the Profile is deleted. Revoke still removes the
// members of its namespace from the account it names: a grant is never left
// behind for the next Profile of the name to inherit.
func TestRevokeFailsClosedWithoutARecord(t *testing.T) {
	acct := &account{policy: &iam.Policy{Etag: "e"}}
	hostile(t, acct)
	name, member := profileWithGrant(t, "wi-lost-")
	if !slices.ContainsFunc(acct.bindings(), func(b *iam.Binding) bool { return slices.Contains(b.Members, member) }) {
		t.Fatalf("the account does not hold the Profile's member: %s", membersOf(acct.bindings()))
	}
	var p kubeflowv1.Profile
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	testhost.LoseRecord(t, env.Client, workloadidentity.Kind, &p)
	if err := env.Client.Delete(t.Context(), &p); err != nil {
		t.Fatal(err)
	}
	testhost.WaitProfileGone(t, env.Client, name, 20*time.Second)
	if got := acct.bindings(); slices.ContainsFunc(got, func(b *iam.Binding) bool { return slices.Contains(b.Members, member) }) {
		t.Errorf("the Profile's member keeps the role after the deletion: %s", membersOf(got))
	}
}

// TestDanglingTrustHoldsTheNextProfileOfTheName: someone else granted the
// namespace's service account the role before the plugin did. When the
// Profile is deleted, that grant stays (it is not the plugin's), and is
// reported as dangling trust; the next Profile of the name gets no account
// while it is recorded, with a condition naming it, until an administrator
// removes the grant and the record.
func TestDanglingTrustHoldsTheNextProfileOfTheName(t *testing.T) {
	name := "wi-dangle-" + rand.String(5)
	member := "serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"
	acct := &account{policy: &iam.Policy{Etag: "e", Bindings: []*iam.Binding{{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{member}}}}}
	hostile(t, acct)
	p := testhost.NewProfile(t, env.Client, name, nil, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if err := env.Client.Delete(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	testhost.WaitProfileGone(t, env.Client, name, 20*time.Second)
	key := client.ObjectKey{Namespace: outside.DefaultRecordsNamespace, Name: outside.DanglingName(workloadidentity.Kind, name)}
	var dangling corev1.ConfigMap
	if err := env.Client.Get(t.Context(), key, &dangling); err != nil {
		t.Fatalf("no dangling-trust record after the deletion: %v", err)
	}
	t.Logf("dangling trust recorded: %v", dangling.Data)
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		got := testhost.Events(t, env.Client, name)
		return slices.ContainsFunc(got, func(e string) bool {
			return strings.Contains(e, "Warning "+outside.ReasonDanglingTrust) && strings.Contains(e, "outlive the Profile") && strings.Contains(e, member)
		}), fmt.Sprintf("events %v", got)
	})
	if !holdsMember(acct, member) {
		t.Fatalf("the grant someone else made was removed: %s", membersOf(acct.bindings()))
	}

	// The next Profile of the name (its namespace and service account are
	// still there: nothing here deletes namespaces).
	next := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeflowv1.ProfileSpec{
		Owner:   rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "someone-else@example.org"},
		Plugins: []kubeflowv1.Plugin{entry(`{"gcpServiceAccount":"` + gsa + `"}`)}}}
	if err := env.Client.Create(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), next) })
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, outside.ReasonDanglingTrust)
	if !strings.Contains(cond.Message, member) || !strings.Contains(cond.Message, key.Name) {
		t.Errorf("condition %q does not name the grant and the record", cond.Message)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		got := testhost.Events(t, env.Client, name)
		return slices.ContainsFunc(got, func(e string) bool { return strings.Contains(e, outside.ReasonDanglingTrust) }), fmt.Sprintf("events %v", got)
	})

	// The administrator removes the grant, then the record.
	acct.mu.Lock()
	acct.policy.Bindings = nil
	acct.mu.Unlock()
	if err := env.Client.Delete(t.Context(), &dangling); err != nil {
		t.Fatal(err)
	}
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Annotations = map[string]string{plugins.AnnotationReverify: "cleared"}
	})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if !holdsMember(acct, member) {
		t.Errorf("the next Profile's member does not hold the role once the record is gone: %s", membersOf(acct.bindings()))
	}
	stopListing(t, next.Name)
}

func holdsMember(acct *account, member string) bool {
	return slices.ContainsFunc(acct.bindings(), func(b *iam.Binding) bool { return slices.Contains(b.Members, member) })
}

// TestRevokeOfADeletedProfileRunTwiceKeepsForeignMembers: the revoke of a
// Profile being deleted may run again before the Profile is gone (its
// finalizer's removal failed, or an event brought it back). The second run
// must still know the member someone else granted is not the plugin's: it
// stays, and is reported as dangling both times.
func TestRevokeOfADeletedProfileRunTwiceKeepsForeignMembers(t *testing.T) {
	ctx := t.Context()
	name := "wi-twice-" + rand.String(5)
	member := "serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"
	acct := &account{policy: &iam.Policy{Etag: "e", Bindings: []*iam.Binding{{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{member}}}}}
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	api := iammock.NewMockIAM(ctrl)
	api.EXPECT().Policy(gomock.Any(), resource).DoAndReturn(acct.get).AnyTimes()
	api.EXPECT().SetPolicy(gomock.Any(), resource, gomock.Any()).DoAndReturn(acct.set).AnyTimes()
	def := workloadidentity.Definition(api)
	p := testhost.NewProfile(t, env.Client, name, nil, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	pass := func(p *kubeflowv1.Profile, revoke bool) {
		t.Helper()
		cfg, err := def.Decode([]byte(`{`+allowed+`}`), p)
		if err != nil {
			t.Fatal(err)
		}
		record := outside.New(env.Client, def.Kind(), p, outside.Options{})
		req := plugins.Request{Profile: p, Config: cfg, Client: env.Client,
			Objects: apply.New(env.Client, def.Kind(), p, def.Owns, apply.OptionsFor(def)...),
			Outside: record}
		run := def.Plugin.Apply
		if revoke {
			run = def.Plugin.Revoke
		}
		if _, err := run(ctx, req); err != nil {
			t.Fatal(err)
		}
		if err := record.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pass(p, false)
	deleting := p.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for i := range 2 {
		pass(deleting, true)
		if !holdsMember(acct, member) {
			t.Fatalf("after revoke %d of the deleted Profile, the member someone else granted is gone: %s", i+1, membersOf(acct.bindings()))
		}
	}
}
