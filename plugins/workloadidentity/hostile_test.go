package workloadidentity_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return false, err.Error()
		}
		return len(p.Finalizers) == 0, "finalizers " + strings.Join(p.Finalizers, ",")
	})
}

// A record of a version before per-member keys (gsa/<account>: it granted
// every member) moves to a key per member on the next pass, and the old key
// goes: the grant stays the host's to revoke, under today's key.
func TestLegacyRecordMovesToMemberKeys(t *testing.T) {
	hostile(t, &account{policy: &iam.Policy{Etag: "e"}})
	name, member := profileWithGrant(t, "wi-legacy-")
	var p kubeflowv1.Profile
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	legacy := "gsa/" + gsa
	testhost.WriteRecord(t, env.Client, workloadidentity.Kind, &p, `{"`+legacy+`":{"hash":"0","at":"2026-01-01T00:00:00Z"}}`)
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, plugins.AnnotationReverify, "legacy")
	})
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		var record corev1.ConfigMap
		if err := env.Client.Get(t.Context(), testhost.RecordKey(workloadidentity.Kind, &p), &record); err != nil {
			return false, err.Error()
		}
		state := record.Data["state.json"]
		return strings.Contains(state, `"grant/`+gsa+`/`+member+`"`) && !strings.Contains(state, `"`+legacy+`"`), "record " + state
	})
	stopListing(t, name)
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
