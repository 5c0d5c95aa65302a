package workloadidentity_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"
	iam "google.golang.org/api/iam/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/fakecloud"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/outside"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
	"github.com/profilekit/profilekit/plugins/workloadidentity/iammock"
	"github.com/profilekit/profilekit/reconcilers"
)

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
	testhost.LoseRecordAndDelete(t, env.Client, workloadidentity.Kind, name)
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

	// The owner's next Profile of the name (its namespace and service account are
	// still there: nothing here deletes namespaces).
	next := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeflowv1.ProfileSpec{
		Owner:   rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: testhost.DefaultOwner},
		Plugins: []kubeflowv1.Plugin{entry(`{"gcpServiceAccount":"` + gsa + `"}`)}}}
	if err := env.Client.Create(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), next) }) //nolint:forbidigo // cleanups run after t.Context is canceled
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

// TestForeignMemberStaysAfterTheProfileMovesOn: someone else let the
// namespace's service account act as an account before the plugin did; the
// Profile moves to another account and then stops listing the plugin. The
// revoke, failing closed on every account the allowances name, still knows
// that member for someone else's and leaves it.
func TestForeignMemberStaysAfterTheProfileMovesOn(t *testing.T) {
	const before, after = "team-before@proj-123.iam.gserviceaccount.com", "team-after@proj-123.iam.gserviceaccount.com"
	name := "wi-move-" + rand.String(5)
	member := workloadidentity.Member("proj-123.svc.id.goog", name, "default-editor")
	srv, c := startGoogle(t, fakecloud.GooglePolicy{})
	srv.AddAccount(workloadidentity.Resource("proj-123", before), fakecloud.GooglePolicy{Bindings: []fakecloud.GoogleBinding{
		{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{member}},
	}})
	srv.AddAccount(workloadidentity.Resource("proj-123", after), fakecloud.GooglePolicy{})
	testhost.Start(t, env, testhost.Plugin{Def: workloadidentity.Definition(c), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(`{"allowedIdentities":[{"identity":"` + before + `"},{"identity":"` + after + `"}]}`)),
		// Profiles of other tests in this control plane are not this host's.
		reconcilers.WithShard(labels.SelectorFromSet(labels.Set{"test": name})),
	}})
	holds := func(gsa string) bool {
		return slices.ContainsFunc(srv.Policy(workloadidentity.Resource("proj-123", gsa)).Bindings, func(b fakecloud.GoogleBinding) bool {
			return b.Role == workloadidentity.RoleWorkloadIdentityUser && slices.Contains(b.Members, member)
		})
	}
	testhost.NewProfile(t, env.Client, name, map[string]string{"test": name}, entry(`{"gcpServiceAccount":"`+before+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Spec.Plugins = []kubeflowv1.Plugin{entry(`{"gcpServiceAccount":"` + after + `"}`)}
	})
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		return holds(after), "the member does not hold the role on " + after
	})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if !holds(before) {
		t.Fatalf("the move took someone else's member off %s", before)
	}

	stopListing(t, name)
	if holds(after) {
		t.Errorf("the plugin's member outlives the revoke on %s", after)
	}
	if !holds(before) {
		t.Errorf("the revoke took someone else's member off %s: %s", before, srv.Calls())
	}
}
